"""What the dashboard shows, as data: the live charts' series, the "now" readout, the
GPU line, the shared legend and the last requests' rows. Pure functions of the session's
samples (no widgets), so the screen only places them and tests read them directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from console.analysis.gpu_sample import GpuSample
from console.analysis.records import LiveSample, RequestSample
from console.analysis.thresholds import BATCHED
from console.measure.live import is_warmup_sample
from console.measure.live_samples import WALL_CLOCK_NOTE
from console.tui.widgets.chart import ChartSeries
from console.tui.widgets.fitted_table import Col
from console.tui.widgets.plotext_render import RGB, legend_entry

# Figures as wide as their widest cell; the text type and how each was measured give
# way with "…" (fixed widths overflowed 88 columns, the browser's 800x600, into a
# horizontal scrollbar); TTFT, often "-", goes before a figure would be cut.
REQUEST_COLUMNS = (
    Col("text", flex=True, min_width=5), Col("context"), Col("tokens"), Col("tok/s"),
    Col("commit"), Col("step ms"), Col("TTFT ms", optional=True),
    Col("measured", flex=True, min_width=8, optional=True),
)  # fmt: skip


# Samples further apart than this are not joined: the engine only reports while it
# decodes, so a long gap is idle time, and a line across it would draw a gradual change
# that never happened.
GAP_S = 10.0
LIVE_CHART_HZ = 0.5  # live chart redraws per second at most (see compose_body)
STALE_S = 30.0  # a newest sample older than this is shown as stale, not as "now"
# One slot (theme colour) and mark per source, the same in every chart and the legend.
SOURCES = (
    ("log", "engine log line"),
    ("metrics", "/metrics delta"),
    ("request", "measured request"),
)
SLOT = {name: i for i, (name, _) in enumerate(SOURCES)}
NARROW_FLAG_SOURCE = {"launch config": "config"}
# The readout is 26 columns wide inside at 80x24: its source names must fit one line.
SHORT_SOURCE = {"log": "log line", "metrics": "/metrics", "request": "request"}
GPU_SLOT = 3


MAX_CHART_INTERVAL_S = 10.0
# Columns of time between live chart redraws. Two: at one sample a second the picture
# then moves in steps of two columns (about 5 s on the default two-minute window at
# 160x48) and the charts cost half the idle CPU of one column a redraw (three plotext
# charts were most of what a live console spends); the readout shows every sample.
CHART_STEP_COLUMNS = 2


def chart_interval(
    samples: Sequence[LiveSample], hz: float, columns: int, window_s: float | None = None
) -> float:
    """Seconds between live chart redraws: `CHART_STEP_COLUMNS` columns' worth of time (a
    redraw sooner moves the picture by less), at least 1/hz, at most 10 s. The
    readout shows every sample at once; a chart spanning ten minutes needs no more."""
    span = samples[-1].t - samples[0].t if len(samples) > 1 else 0.0
    if window_s is not None:
        span = min(span, window_s)  # the charts show this window, not the whole session
    return min(MAX_CHART_INTERVAL_S, max(1.0 / hz, CHART_STEP_COLUMNS * span / columns))


def charted(samples: Sequence[LiveSample]) -> list[LiveSample]:
    """The samples that are traffic: a warm-up request before a sweep is not."""
    return [s for s in samples if not is_warmup_sample(s)]


# The live charts' time windows, narrowest first (t widens): a session's whole history
# on one axis piled the newest points into the last column.
WINDOWS_S: tuple[float | None, ...] = (120.0, 600.0, 3600.0, None)


def window_text(window_s: float | None) -> str:
    if window_s is None:
        return "whole session"
    return f"last {window_s / 60:.0f} min" if window_s >= 60 else f"last {window_s:.0f} s"


def in_window(samples: Sequence, window_s: float | None) -> list:
    """The samples of the last `window_s` seconds before the newest (all for None)."""
    if window_s is None or not samples:
        return list(samples)
    start = max(s.t for s in samples) - window_s
    return [s for s in samples if s.t >= start]


def chart_series(
    samples: list[LiveSample], window_s: float | None = None
) -> dict[str, list[ChartSeries]]:
    """The three live charts' series, x in seconds before the newest sample, over the
    last `window_s` seconds: one per source (log lines and /metrics as lines cut at idle
    gaps, measured requests as points, since each is one separate measurement)."""
    samples = in_window(charted(samples), window_s)
    if not samples:
        return {"tok": [], "commit": [], "step": []}
    newest = max(s.t for s in samples)

    def series(get) -> list[ChartSeries]:
        out = []
        for source, label in SOURCES:
            points = [(s.t - newest, get(s)) for s in samples
                      if s.source == source and get(s) is not None]  # fmt: skip
            if not points:
                continue
            if source == "request":
                out.append(ChartSeries(label, points, markers=True, lines=False,
                                       slot=SLOT[source]))  # fmt: skip
            else:
                # A fixed gap, not one scaled to the source's spacing: a source that
                # reports once per request would otherwise be joined across idle
                # minutes; its lone points are drawn as points instead.
                out.append(ChartSeries(label, points, gap=GAP_S, slot=SLOT[source]))
        return out

    return {
        "tok": series(lambda s: s.tok_s),
        "commit": series(lambda s: s.commit_len),
        "step": series(lambda s: None if s.step_time_s is None else s.step_time_s * 1000),
    }


def gpu_series(samples: Sequence[GpuSample], window_s: float | None = None) -> list[ChartSeries]:
    """GPU utilisation and memory (both %), one line per GPU and figure, over the same
    time axis as the live charts would have (seconds before the newest GPU sample)."""
    samples = in_window(samples, window_s)
    if not samples:
        return []
    newest = max(s.t for s in samples)
    out = []
    for index in sorted({s.index for s in samples}):
        mine = [s for s in samples if s.index == index]
        for slot, (name, get) in enumerate(
            (("util %", lambda s: s.utilization_pct), ("mem %", lambda s: s.memory_pct))
        ):
            points = [(s.t - newest, get(s)) for s in mine if get(s) is not None]
            if points:
                label = f"GPU{index} {name}" if len(mine) < len(samples) else name
                out.append(ChartSeries(label, points, gap=GAP_S, slot=GPU_SLOT + slot))
    return out


def gpu_text(samples: Sequence[GpuSample]) -> str:
    """The newest GPU figures in one line ("" without GPUs): util, memory, power, clock."""
    if not samples:
        return ""
    newest = max(s.t for s in samples)
    parts = []
    for s in sorted((s for s in samples if s.t == newest), key=lambda s: s.index):
        figures = []
        if s.utilization_pct is not None:
            figures.append(f"{s.utilization_pct:.0f}%")
        if s.memory_used_mib is not None and s.memory_total_mib:
            figures.append(f"{s.memory_used_mib / 1024:.1f}/{s.memory_total_mib / 1024:.0f}G")
        if s.power_w is not None:
            figures.append(f"{s.power_w:.0f}W")
        if s.sm_clock_mhz is not None:
            figures.append(f"{s.sm_clock_mhz:.0f}MHz")
        parts.append(f"GPU{s.index} " + " ".join(figures))
    return "  ".join(parts)


def age_text(age_s: float) -> str:
    """How old the newest sample is, coarse enough to change rarely (every text change
    is a repaint, and this one follows the clock, not the data)."""
    if age_s < 10:
        return "<10 s ago"
    if age_s < 90:
        return f"{int(age_s // 10) * 10} s ago"
    if age_s < 90 * 60:
        return f"{round(age_s / 60)} min ago"
    return f"{round(age_s / 3600)} h ago"


@dataclass(frozen=True)
class NowFigures:
    """The newest traffic figures for the big readout, and where they came from."""

    t: float
    source: str
    tok_s: float | None
    commit: float | None
    step_ms: float | None
    context: int | None
    # requests a round over the shown interval (ours): above 1, tok/s is the streams' sum
    batch: float | None = None


def now_figures(samples: Sequence[LiveSample]) -> NowFigures | None:
    """The newest sample's figures; a figure it lacks comes from the newest that has it
    (a log line without a context still shows the context the last request had)."""

    # Samples arrive in time order: walk back from the end (this runs per sample, so
    # no sort and no copy of the whole history).
    def ordered():
        return (
            s
            for s in reversed(samples)
            if not is_warmup_sample(s) and (s.tok_s is not None or s.commit_len is not None)
        )

    newest = next(ordered(), None)
    if newest is None:
        return None

    def latest(get):
        return next((get(s) for s in ordered() if get(s) is not None), None)

    step = latest(lambda s: s.step_time_s)
    shown, source = _rate_shown(ordered())
    return NowFigures(
        t=newest.t if shown is None else shown.t,
        source=source or SHORT_SOURCE.get(newest.source, newest.source),
        tok_s=None if shown is None else shown.tok_s,
        commit=latest(lambda s: s.commit_len),
        step_ms=None if step is None else step * 1000,
        context=latest(lambda s: s.context_tokens),
        batch=None if shown is None else shown.batch,
    )


def _rate_shown(newest_first) -> tuple[LiveSample | None, str]:
    """The sample whose tok/s the readout shows, and its source label: the newest decode
    rate; a wall-clock average (vLLM's log line: tokens over the log interval, idle
    included, 16 tok/s right after a 670 tok/s request) only when no decode rate from the
    same minute is there to show, and then labelled as what it is."""
    wall = None
    for s in newest_first:
        if s.tok_s is None:
            continue
        if s.note != WALL_CLOCK_NOTE:
            if wall is None or wall.t - s.t <= STALE_S:
                return s, ""
            break
        wall = wall or s
    if wall is None:
        return None, ""
    return wall, f"{SHORT_SOURCE.get(wall.source, wall.source)}, wall-clock avg"


def now_lines(now: NowFigures | None, at: float) -> tuple[str, Text]:
    """(the big tok/s figure, the lines under it) of the readout at time `at`."""
    if now is None:
        return "-", Text("tok/s  no decode yet\ncommit -  step -  ctx -")
    stale = at - now.t > STALE_S
    text = Text()
    text.append("tok/s", style="bold")
    if now.batch is not None and now.batch >= BATCHED:
        # the figure is the sum over the streams; commit and step are one stream's
        text.append(f" batch {now.batch:.1f}", style="bold")
    text.append(f"  {'STALE, ' if stale else ''}{age_text(at - now.t)}",
                style="bold reverse" if stale else "")  # fmt: skip
    text.append(f"\ncommit {_fmt(now.commit, '.2f')}  step {_fmt(now.step_ms, '.1f')}ms")
    text.append(f"\nctx {now.context if now.context is not None else '-'}  {now.source}")
    return _fmt(now.tok_s, ".1f"), text


def live_caption(
    samples: list[LiveSample],
    colors: Sequence[RGB] = ((78, 161, 211),),
    window_s: float | None = WINDOWS_S[0],
    width: int | None = None,
) -> Text:
    """The charts' shared legend: which mark is which source (log lines, /metrics,
    measured requests), and what x means, in `width` columns where given: the longest
    wording that fits, never a cut one ("gap: idle" lost its last word at 80 columns)."""
    samples = charted(samples)
    if not samples:
        return Text("no live samples yet: the engine has not decoded since the console opened")
    # Which sources, not how many samples: the caption then changes only when a source
    # appears, and an unchanged caption costs no relayout of the screen per sample.
    present = {s.source for s in samples}
    window = window_text(window_s)
    # x is the same for the three charts, so it is said once; the footer also names the
    # key that widens the window, so that hint goes first where room is short.
    heads = (f"x: s before the latest, {window} (t widens)", f"x: s before the latest, {window}",
             f"x: s before latest, {window}", f"x: s, {window}")  # fmt: skip
    legend = Text()
    for source, _ in SOURCES:
        if source in present:
            legend_entry(legend, ChartSeries(SHORT_SOURCE[source], (), markers=source == "request",
                                             lines=source != "request"),
                         colors[SLOT[source] % len(colors)])  # fmt: skip
    legend.append("  gap: idle")
    fits = [h for h in heads if width is None or len(h) + legend.cell_len <= width]
    return Text(fits[0] if fits else heads[-1]).append_text(legend)


def ellipsize(text: str, width: int) -> str:
    """`text` cut to `width` columns with an ellipsis, or whole when it fits."""
    # No space before the ellipsis: "the drafter's…", not "the drafter's …".
    return text if len(text) <= width else text[: max(0, width - 1)].rstrip() + "…"


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def request_row(r: RequestSample) -> tuple[str, ...]:
    how = f"{r.decode_source or '?'}{', stream' if r.streamed else ''}"
    if r.flagged:
        how += f" (kept out: {r.flagged})"
    return (
        r.text_type,
        str(r.context_tokens),
        str(r.completion_tokens),
        _fmt(r.decode_tok_s, ".1f"),
        _fmt(r.commit_len, ".2f"),
        _fmt(None if r.step_time_s is None else r.step_time_s * 1000, ".1f"),
        _fmt(None if r.ttft_s is None else r.ttft_s * 1000, ".0f"),
        how,
    )
