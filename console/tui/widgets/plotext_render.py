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

import itertools
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import plotext
from rich.text import Text

_LOCK = threading.Lock()
# plotext's braille dots (U+2801-U+28FF; U+2800 is the blank pattern)
_BRAILLE_RUN = re.compile("[\u2801-\u28ff]+")
_SGR = re.compile("\x1b\\[[0-9;]*m")  # the resets plotext writes even uncoloured

RGB = tuple[int, int, int]


@dataclass(frozen=True)
class ChartSeries:
    """One line: a label (shown in the legend when there are several) and (x, y) points."""

    label: str
    points: Sequence[tuple[float, float]]


def downsample(points: Sequence[tuple[float, float]], max_points: int) -> list[tuple[float, float]]:
    """At most `max_points` points, each the mean of one equal-width x bucket."""
    clean = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    if any(a[0] > b[0] for a, b in itertools.pairwise(clean)):
        clean.sort()  # series arrive in time order; sorting is only for the odd one
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
        # One line: draw it uncoloured and colour its dots here, which skips parsing
        # plotext's ANSI output (a third of a redraw); several lines need plotext's colours.
        single = len(drawn) == 1
        for i, s in enumerate(drawn):
            points = downsample(s.points, max(2, 2 * width))
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            marker = plotext.marker("braille", None if single else colors[i % len(colors)])
            signal = fig.signal(xs, ys, marker=marker)
            if len(points) > 1:
                signal.lines()
            fig.draw(signal)
        out = fig.build().string()
        fig.clear()
    if drawn and len(drawn) == 1:
        text = Text(_SGR.sub("", out).rstrip("\n"), no_wrap=True, end="")
        r, g, b = colors[0]
        style = f"rgb({r},{g},{b})"
        for match in _BRAILLE_RUN.finditer(text.plain):
            text.stylize(style, match.start(), match.end())
    else:
        text = Text.from_ansi(out.rstrip("\n"), no_wrap=True, end="")
    if legend:
        text.append("\n")
        for i, s in enumerate(drawn):
            r, g, b = colors[i % len(colors)]
            text.append("  ━━ ", style=f"rgb({r},{g},{b})")
            text.append(s.label)
    return text
