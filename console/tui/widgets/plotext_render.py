"""Line charts drawn by plotext 6, as Rich text a widget can return from `render()`.

Why our own thin layer instead of textual-plotext: textual-plotext pins plotext below 6
and reaches into plotext's private modules (`_dict`, `_utility`, `_figure`), which
plotext 6 (a rewrite with a C++ kernel and a `plotext.figure` object API) removed, so
the two cannot be installed together with a current plotext. We only need line charts,
and plotext 6's public API (`figure.clear/plot_size/signal/draw/build`) gives them.

plotext 6 offers one public figure (`plotext.figure`); every chart is drawn into it and
taken out as a string, under a lock, so two charts never interleave. Points are
downsampled to one per column first: a build then costs a few
milliseconds whatever the history length, which keeps it cheap enough for the UI thread.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
import types
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from console.tui.widgets import axis_ticks


def _plotext() -> types.ModuleType:
    """plotext, imported at the first chart drawn: the console's first frame (the host
    picker) draws none, and the import is a tenth of a second."""
    import plotext

    return plotext


_LOCK = threading.Lock()
# plotext's braille dots (U+2801-U+28FF; U+2800 is the blank pattern)
_SGR = re.compile("\x1b\\[[0-9;]*m")  # the resets plotext writes even uncoloured

RGB = tuple[int, int, int]


# The marker a sparse point is drawn with: a whole cell, so one sweep point or one
# measured request reads as a point and not as a dot lost in a line.
POINT_MARKER = "●"
# what a series draws (braille dots, point markers): coloured in the one-series fast path
_DRAWN_RUN = re.compile(f"[\u2801-\u28ff{POINT_MARKER}]+")


@dataclass(frozen=True)
class ChartSeries:
    """One series: a label (shown in the legend when there are several) and (x, y) points.

    `markers`: draw each point as a marker, for sparse points (sweep points, measured
    requests) that a line would make look like a dense measurement.
    `lines`: join consecutive points (off for points that are separate measurements).
    `spread`: (low, high) per point, drawn as a vertical bar through it.
    `gap`: consecutive points further apart in x than this are not joined, so minutes
    without traffic show as a gap, not as a gradual change that never happened.
    """

    label: str
    points: Sequence[tuple[float, float]]
    markers: bool = False
    lines: bool = True
    spread: Sequence[tuple[float, float]] | None = None
    gap: float | None = None
    slot: int | None = None  # which theme colour; fixed per meaning so legends agree


Points = Sequence[tuple[float, float]]


def segments(points: Points, gap: float | None) -> list[list[tuple[float, float]]]:
    """`points` (in x order) cut wherever two neighbours are more than `gap` apart."""
    out: list[list[tuple[float, float]]] = []
    for point in points:
        if not out or (gap is not None and point[0] - out[-1][-1][0] > gap):
            out.append([point])
        else:
            out[-1].append(point)
    return out


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


def legend_entry(text: Text, s: ChartSeries, color: RGB) -> None:
    """`━━ label` for a line, `● label` for points: the mark the chart draws it with."""
    r, g, b = color
    mark = "━━" if s.lines and not s.markers else POINT_MARKER
    text.append(f"  {mark} ", style=f"rgb({r},{g},{b})")
    text.append(s.label)


def _draw_series(fig, s: ChartSeries, width: int, color: RGB | None) -> None:
    # Spread bars first, so the point's marker sits on top of its bar.
    for (x, _), (low, high) in zip(s.points, s.spread or (), strict=False):
        if all(math.isfinite(v) for v in (x, low, high)) and high > low:
            fig.draw(fig.segment([x, x], [low, high], marker=_plotext().marker("braille", color)))
    clean = sorted((x, y) for x, y in s.points if math.isfinite(x) and math.isfinite(y))
    parts = segments(clean, s.gap)
    total = max(1, len(clean))
    for part in parts:
        if s.markers:
            points = part  # sparse by definition: every point is shown as measured
        else:
            # Each run between gaps keeps its share of one point per column: the lines
            # between them fill the braille dots, and plotext's cost follows the points
            # (a live chart redraws every sample, so this is most of idle CPU).
            points = downsample(part, max(2, width * len(part) // total))
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        if s.lines and len(points) > 1:
            line = fig.signal(xs, ys, marker=_plotext().marker("braille", color))
            line.lines()
            fig.draw(line)
        if s.markers or len(points) == 1:
            # A lone point between gaps would be one braille dot; a marker shows it.
            fig.draw(fig.signal(xs, ys, marker=_plotext().marker(POINT_MARKER, color)))


def _round_axes(fig, drawn: Sequence[ChartSeries], width: int, rows: int) -> None:
    """Round ticks on evenly spaced rows, plain labels with SI suffixes (axis_ticks)."""
    ys = [y for s in drawn for _, y in s.points if math.isfinite(y)]
    ys += [v for s in drawn for pair in (s.spread or ()) for v in pair if math.isfinite(v)]
    xs = [x for s in drawn for x, _ in s.points if math.isfinite(x)]
    if not ys or not xs or rows < 2:
        return
    low, upper, ticks = axis_ticks.y_axis(min(ys), max(ys), rows)
    step = axis_ticks.tick_step(ticks)
    fig.ruler("y").lim(low, upper)
    fig.ruler("y").ticks(ticks, [axis_ticks.label(t, step) for t in ticks])
    x_lo, x_hi = min(xs), max(xs)
    if x_hi > x_lo:
        fig.ruler("x").lim(x_lo, x_hi)
        xt = axis_ticks.x_ticks(x_lo, x_hi, width)
        x_step = axis_ticks.tick_step(xt)
        fig.ruler("x").ticks(xt, [axis_ticks.label(t, x_step) for t in xt])


def render_lines(
    series: Sequence[ChartSeries],
    width: int,
    height: int,
    *,
    title: str = "",
    x_label: str = "",
    colors: Sequence[RGB] = ((78, 161, 211),),
    empty: str = "no data yet",
    legend: bool | None = None,
) -> Text:
    """The chart as text of exactly `height` lines (axes and labels uncoloured, so the
    widget's own foreground colour, i.e. the theme's, applies to them). `legend`: a
    line naming the series under the chart; by default when there are several (a
    screen that shows one legend for several charts turns it off)."""
    if width < 12 or height < 5:
        return Text("")
    drawn = [s for s in series if s.points]
    # plotext's legend box sits inside the canvas and hides the first points; the legend
    # is a line of our own under the chart instead.
    legend = len(drawn) > 1 if legend is None else legend and bool(drawn)
    plot_height = height - 1 if legend else height
    with _LOCK:
        fig = _plotext().figure
        fig.clear()
        fig.plot_size(width, plot_height)
        fig.theme("colorless")
        fig.canvas("default")
        fig.legend(False)
        fig.title(_title(title, empty, drawn, width))
        if x_label:
            fig.label(x_label, "x")
        # One series: draw it uncoloured and colour its dots here, which skips parsing
        # plotext's ANSI output (a third of a redraw); several need plotext's colours.
        single = len(drawn) == 1
        for i, s in enumerate(drawn):
            slot = i if s.slot is None else s.slot
            color = None if single else colors[slot % len(colors)]
            _draw_series(fig, s, width, color)
        if drawn:
            # the canvas rows: the plot less its frame (2), x tick labels, title, x label
            rows = plot_height - 3 - (1 if title else 0) - (1 if x_label else 0)
            _round_axes(fig, drawn, width, rows)
        # No clear after the build: the next chart clears first, and a clear costs as
        # much as a third of a small build.
        out = fig.build().string()
    if drawn and len(drawn) == 1:
        text = Text(_SGR.sub("", out).rstrip("\n"), no_wrap=True, end="")
        r, g, b = colors[(drawn[0].slot or 0) % len(colors)]
        style = f"rgb({r},{g},{b})"
        for match in _DRAWN_RUN.finditer(text.plain):
            text.stylize(style, match.start(), match.end())
    else:
        text = Text.from_ansi(out.rstrip("\n"), no_wrap=True, end="")
    if legend:
        line = Text()
        for i, s in enumerate(drawn):
            legend_entry(line, s, colors[(i if s.slot is None else s.slot) % len(colors)])
        line.truncate(width, overflow="ellipsis")  # cut with "…", never silently
        text.append("\n")
        text.append_text(line)
    return text


def _title(title: str, empty: str, drawn: list, width: int) -> str:
    """The chart's title; with nothing drawn, the empty note beside it where the width
    holds both, else the title alone (plotext drops a title wider than the chart, which
    left empty charts at 80 columns with no name at all)."""
    if drawn or not title:
        return title or ("" if drawn else empty)
    both = f"{title} ({empty})"
    return both if len(both) <= width - 2 else title
