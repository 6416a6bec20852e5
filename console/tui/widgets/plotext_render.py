"""Line charts drawn by plotext 6, as Rich text a widget can return from `render()`.

Why our own thin layer instead of textual-plotext: textual-plotext pins plotext below 6
and reaches into plotext's private modules (`_dict`, `_utility`, `_figure`), which
plotext 6 (a rewrite with a C++ kernel and a `plotext.figure` object API) removed, so
the two cannot be installed together with a current plotext. We only need line charts,
and plotext 6's public API (`figure.clear/plot_size/signal/draw/build`) gives them.

plotext 6 offers one public figure (`plotext.figure`); every chart is drawn into it and
taken out as a string, under a lock, so two charts never interleave. Points are
downsampled to twice the width (braille dots per cell) first: a build then costs a few
milliseconds whatever the history length, which keeps it cheap enough for the UI thread.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import plotext
from rich.text import Text

_LOCK = threading.Lock()

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class ChartSeries:
    """One line: a label (shown in the legend when there are several) and (x, y) points."""

    label: str
    points: Sequence[tuple[float, float]]


def downsample(points: Sequence[tuple[float, float]], max_points: int) -> list[tuple[float, float]]:
    """At most `max_points` points, each the mean of one equal-width x bucket."""
    clean = sorted((x, y) for x, y in points if math.isfinite(x) and math.isfinite(y))
    if len(clean) <= max_points or max_points < 2:
        return clean
    lo, hi = clean[0][0], clean[-1][0]
    if hi == lo:
        return [(lo, sum(y for _, y in clean) / len(clean))]
    width = (hi - lo) / max_points
    buckets: dict[int, list[tuple[float, float]]] = {}
    for x, y in clean:
        buckets.setdefault(min(int((x - lo) / width), max_points - 1), []).append((x, y))
    return [
        (sum(x for x, _ in b) / len(b), sum(y for _, y in b) / len(b))
        for _, b in sorted(buckets.items())
    ]


def render_lines(
    series: Sequence[ChartSeries],
    width: int,
    height: int,
    *,
    title: str = "",
    x_label: str = "",
    colors: Sequence[RGB] = ((78, 161, 211),),
    empty: str = "no data yet",
) -> Text:
    """The chart as text of exactly `height` lines (axes and labels uncoloured, so the
    widget's own foreground colour, i.e. the theme's, applies to them)."""
    if width < 12 or height < 5:
        return Text("")
    drawn = [s for s in series if s.points]
    # plotext's legend box sits inside the canvas and hides the first points; the legend
    # is a line of our own under the chart instead.
    legend = len(drawn) > 1
    plot_height = height - 1 if legend else height
    with _LOCK:
        fig = plotext.figure
        fig.clear()
        fig.plot_size(width, plot_height)
        fig.theme("colorless")
        fig.canvas("default")
        fig.legend(False)
        fig.title(title if drawn else f"{title} ({empty})" if title else empty)
        if x_label:
            fig.label(x_label, "x")
        for i, s in enumerate(drawn):
            points = downsample(s.points, max(2, 2 * width))
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            marker = plotext.marker("braille", colors[i % len(colors)])
            signal = fig.signal(xs, ys, marker=marker)
            if len(points) > 1:
                signal.lines()
            fig.draw(signal)
        out = fig.build().string()
        fig.clear()
    text = Text.from_ansi(out.rstrip("\n"), no_wrap=True, end="")
    if legend:
        text.append("\n")
        for i, s in enumerate(drawn):
            r, g, b = colors[i % len(colors)]
            text.append("  ━━ ", style=f"rgb({r},{g},{b})")
            text.append(s.label)
    return text
