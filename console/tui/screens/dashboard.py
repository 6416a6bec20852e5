"""`d`: is the service up, with which key flags, and how fast is it decoding right now.

State and load progress come from the lifecycle events and the status poll, the key
flags from the launch config, the schema's roles and the engine's /get_server_info,
the charts and the request table from the live series. Every figure in the table says
how it was measured (server-side or client-side, streamed or not, context, text type).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widgets import DataTable, Digits, ProgressBar, Static

from console.analysis.gpu_sample import GpuSample
from console.analysis.records import LiveSample, RequestSample
from console.measure.live import is_warmup_sample
from console.service.flag_view import read_flag_view
from console.tui import keys
from console.tui.screens.base import ViewScreen
from console.tui.state import watch_config, watch_state
from console.tui.widgets.chart import Chart, ChartSeries
from console.tui.widgets.plotext_render import RGB, legend_entry
from console.tui.widgets.status_bar import state_text

REQUEST_COLUMNS = (
    ("text", 10),
    ("context", 7),
    ("tokens", 6),
    ("tok/s", 7),
    ("commit", 6),
    ("step ms", 7),
    ("TTFT ms", 7),
    ("measured", 40),
)


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


def chart_interval(samples: Sequence[LiveSample], hz: float, columns: int) -> float:
    """Seconds between live chart redraws: about one column's worth of time (a redraw
    sooner moves the picture by less than a column), at least 1/hz, at most 10 s. The
    readout shows every sample at once; a chart spanning ten minutes needs no more."""
    span = samples[-1].t - samples[0].t if len(samples) > 1 else 0.0
    return min(MAX_CHART_INTERVAL_S, max(1.0 / hz, span / columns))


def wall_clock() -> float:
    """Now, for the age of the last sample (tests pin it so a snapshot has no clock)."""
    return time.time()


def charted(samples: Sequence[LiveSample]) -> list[LiveSample]:
    """The samples that are traffic: a warm-up request before a sweep is not."""
    return [s for s in samples if not is_warmup_sample(s)]


def chart_series(samples: list[LiveSample]) -> dict[str, list[ChartSeries]]:
    """The three live charts' series, x in seconds before the newest sample: one per
    source (log lines and /metrics as lines cut at idle gaps, measured requests as
    points, since each is one separate measurement)."""
    samples = charted(samples)
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


def gpu_series(samples: Sequence[GpuSample]) -> list[ChartSeries]:
    """GPU utilisation and memory (both %), one line per GPU and figure, over the same
    time axis as the live charts would have (seconds before the newest GPU sample)."""
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
    return NowFigures(
        t=newest.t,
        source=SHORT_SOURCE.get(newest.source, newest.source),
        tok_s=newest.tok_s if newest.tok_s is not None else latest(lambda s: s.tok_s),
        commit=latest(lambda s: s.commit_len),
        step_ms=None if step is None else step * 1000,
        context=latest(lambda s: s.context_tokens),
    )


def now_lines(now: NowFigures | None, at: float) -> tuple[str, Text]:
    """(the big tok/s figure, the lines under it) of the readout at time `at`."""
    if now is None:
        return "-", Text("tok/s  no decode yet\ncommit -  step -  ctx -")
    stale = at - now.t > STALE_S
    text = Text()
    text.append("tok/s", style="bold")
    text.append(f"  {'STALE, ' if stale else ''}{age_text(at - now.t)}",
                style="bold reverse" if stale else "")  # fmt: skip
    text.append(f"\ncommit {_fmt(now.commit, '.2f')}  step {_fmt(now.step_ms, '.1f')}ms")
    text.append(f"\nctx {now.context if now.context is not None else '-'}  {now.source}")
    return _fmt(now.tok_s, ".1f"), text


def live_caption(samples: list[LiveSample], colors: Sequence[RGB] = ((78, 161, 211),)) -> Text:
    """The charts' shared legend: which mark is which source (log lines, /metrics,
    measured requests), and what x means."""
    samples = charted(samples)
    if not samples:
        return Text("no live samples yet: the engine has not decoded since the console opened")
    # Which sources, not how many samples: the caption then changes only when a source
    # appears, and an unchanged caption costs no relayout of the screen per sample.
    present = {s.source for s in samples}
    # Short enough for 80 columns: x is the same for the three charts, so it is said once.
    text = Text("x: s before the latest sample")
    for source, _ in SOURCES:
        if source in present:
            legend_entry(text, ChartSeries(SHORT_SOURCE[source], (), markers=source == "request",
                                           lines=source != "request"),
                         colors[SLOT[source] % len(colors)])  # fmt: skip
    text.append("  gap: idle")
    return text


def ellipsize(text: str, width: int) -> str:
    """`text` cut to `width` columns with an ellipsis, or whole when it fits."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


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


class DashboardScreen(ViewScreen):
    # The dashboard's layout lives with it: three sizes (80x24, 100x30, 160x48 and what
    # lies between) are picked by classes set on resize, since CSS has no media queries.
    DEFAULT_CSS = """
    DashboardScreen #dash-top { height: 10; }
    DashboardScreen #dash-state { width: 1fr; }
    DashboardScreen #dash-now { width: 32; }
    DashboardScreen #dash-now.stale #now-tok { color: $text-muted; }
    DashboardScreen #now-tok { width: auto; height: 3; }
    DashboardScreen #now-text { height: 3; }
    DashboardScreen #dash-flags { width: 2fr; }
    DashboardScreen #flags-table { height: auto; }
    DashboardScreen #state-line { height: auto; }
    DashboardScreen #state-hint { color: $warning; margin-top: 1; }
    DashboardScreen #load-progress { margin-top: 1; }
    DashboardScreen #dash-charts { height: 16; }
    DashboardScreen #dash-charts Chart {
        width: 1fr; height: 100%; border: round $foreground 30%;
    }
    DashboardScreen #chart-gpu { display: none; }
    DashboardScreen.-gpu #chart-gpu { display: block; }
    DashboardScreen #live-caption { height: 1; padding: 0 1; color: $text-muted; }
    DashboardScreen #requests {
        height: 1fr; min-height: 4; border: round $foreground 30%; border-title-color: $primary;
    }
    DashboardScreen.-short #dash-top { height: 9; }
    DashboardScreen.-short #dash-charts { height: 10; }
    DashboardScreen.-tiny #dash-top { height: 8; }
    DashboardScreen.-tiny #dash-charts { height: 8; }
    DashboardScreen.-tiny #state-hint { margin-top: 0; }
    DashboardScreen.-tiny #dash-charts Chart { border: none; padding: 0 1 0 0; }
    DashboardScreen.-narrow #dash-now { width: 30; }
    DashboardScreen.-narrow #dash-flags { width: 1fr; }
    DashboardScreen.-narrow.-ready #dash-state { display: none; }
    DashboardScreen.-narrow #dash-now { display: none; }
    DashboardScreen.-narrow.-ready #dash-now { display: block; }
    DashboardScreen.-narrow #chart-gpu { display: none; }
    """

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="dash-top"):
            with Vertical(id="dash-state", classes="panel"):
                yield Static("", id="state-line")
                yield ProgressBar(total=100, show_eta=False, id="load-progress")
                yield Static("", id="state-hint")
            with Vertical(id="dash-now", classes="panel"):
                yield Digits("-", id="now-tok")
                yield Static("", id="now-text")
            with Vertical(id="dash-flags", classes="panel"):
                yield DataTable(id="flags-table", show_cursor=False)
        # The live charts span minutes: one redraw per 2 s at most loses nothing an
        # operator reads off them, while the "now" readout shows every sample at once.
        # Each redraw of the three charts is most of the dashboard's idle CPU.
        hz = self._chart_hz = min(self.session.settings.chart_hz, LIVE_CHART_HZ)
        self._charts_at = 0.0  # when the chart series were last built
        self._charts_timer: Timer | None = None
        self._charts_due: dict[str, str] | None = None  # the charts the next update draws
        with Horizontal(id="dash-charts"):
            # The shared legend (the caption line) names the sources and x for all charts.
            for title, chart_id in (("decode tok/s", "chart-tok"),
                                    ("commit length", "chart-commit"),
                                    ("step time (ms)", "chart-step"),
                                    ("GPU util / mem (%)", "chart-gpu")):  # fmt: skip
                yield Chart(title, hz=hz, legend=chart_id == "chart-gpu", id=chart_id)
        yield Static("", id="live-caption")
        yield DataTable(id="requests", show_cursor=False, zebra_stripes=True)

    def on_mount(self) -> None:
        self._flag_widths: tuple[int, ...] = ()
        self._live_key: tuple | None = None
        self._now: NowFigures | None = None
        self._now_shown: tuple | None = None
        if not self._intact():
            return
        self.query_one("#dash-flags").border_title = "key flags"
        self.query_one("#dash-state").border_title = "service"
        self.query_one("#dash-now").border_title = "now"
        requests = self.query_one("#requests", DataTable)
        requests.border_title = "last requests"
        for label, width in REQUEST_COLUMNS:
            requests.add_column(label, width=width)
        for name in ("status", "lifecycle", "running"):
            watch_state(self, name, lambda _=None: self._show_state())
        watch_state(self, "server_info", lambda _=None: self._load_flags())
        # The key flags follow every change of the launch config: an action here ending
        # (apply, rollback) or a `specconsole set` from another shell (the polled status
        # names the new config).
        watch_state(self, "running", lambda running: None if running else self._load_flags())
        watch_config(self, self._load_flags)
        watch_state(self, "live_version", lambda _=None: self._show_live())
        self._fit(self.app.size.width, self.app.size.height)  # loads the flags
        self._show_state()
        self._show_live()
        # The age of the last sample moves with the clock, not with data: one cheap text
        # update a second (and only when the shown text changes), never a chart redraw.
        self.set_interval(1.0, self._show_now)

    def _intact(self) -> bool:
        # False when a quit (or a host switch) arrived while this screen mounted: its
        # widgets are already being removed and there is nothing left to fill in.
        return bool(self.query("#flags-table"))

    def on_resize(self, event) -> None:
        if self._intact():
            self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        self.set_class(width < 120, "-narrow")
        self.set_class(height < 36, "-short")
        self.set_class(height < 28, "-tiny")
        widths = (16, 14, 8) if width < 120 else (22, 16, 13)
        if widths != self._flag_widths:
            self._flag_widths = widths
            flags = self.query_one("#flags-table", DataTable)
            flags.clear(columns=True)
            for label, w in zip(("flag", "value", "from"), widths, strict=True):
                flags.add_column(label, width=w)
            self._load_flags()  # the labels' length depends on the width too
            # A short screen has no row to spare for the header: the panel title says it.
            flags.show_header = height >= 28

    def _show_state(self) -> None:
        session = self.session
        state, detail = state_text(session)
        self.set_class(state == "ready", "-ready")
        line = Text(state.upper(), style="bold")
        if detail:
            line.append(f"  {detail}")
        event = session.lifecycle
        message = event.message if event is not None and session.running else ""
        if not message and session.status is not None:
            message = session.status.message
        if message:
            line.append(f"\n{message}")
        self.query_one("#state-line", Static).update(line)
        progress = self.query_one("#load-progress", ProgressBar)
        percent = event.percent if event is not None and state == "loading" else None
        if percent is None and session.status is not None and state == "loading":
            percent = session.status.percent
        progress.display = state in ("starting", "loading")
        progress.update(progress=percent or 0)
        start_key = keys.display_keys(keys.BY_ID["start"], session.keymap)
        hints = {
            "stopped": f"Press {start_key} to start it.",
            "failed": f"The engine failed. Press {start_key} to start it again, or s for "
            "the exit code, log lines and rollback.",
        }
        self.query_one("#state-hint", Static).update(
            "" if session.running else hints.get(state, "")
        )

    @work(group="dash-flags", exclusive=True, exit_on_error=False)
    async def _load_flags(self) -> None:
        service = self.session.service
        if service is None:
            return
        try:
            # The polled /get_server_info, not a new request: it changes with the engine.
            view = await read_flag_view(service, info=self.session.server_info, ask_engine=False)
        except Exception as exc:
            self.query_one("#flags-table", DataTable).clear()
            self.notify(f"Could not read the flags: {exc}", severity="error")
            return
        table = self.query_one("#flags-table", DataTable)
        table.clear()
        narrow = self.has_class("-narrow")
        for key_flag in view.key_flags():
            label, value, source = key_flag.as_tuple()
            if narrow:
                # "draft tokens (block)" would be cut mid-word in a narrow column.
                label = label.split(" (")[0]
                source = NARROW_FLAG_SOURCE.get(source, source)
            # Wide text ends in an ellipsis, so a cut value never reads as a whole one.
            cells = zip((label, value, source), self._flag_widths, strict=True)
            table.add_row(*(ellipsize(v, w) for v, w in cells))

    def _show_now(self) -> None:
        big, text = now_lines(self._now, wall_clock())
        key = (big, text.plain)
        if key == self._now_shown:
            return
        self._now_shown = key
        self.query_one("#now-tok", Digits).update(big)
        # Fixed size: no layout pass for a text that changes every second.
        self.query_one("#now-text", Static).update(text, layout=False)
        stale = self._now is not None and wall_clock() - self._now.t > STALE_S
        self.query_one("#dash-now").set_class(stale, "stale")

    def _chart_columns(self) -> int:
        return max(1, self.query_one("#chart-tok", Chart).content_size.width)

    def _draw_charts(self) -> None:
        self._charts_timer = None
        if self._charts_due is None:
            return
        charts = self._charts_due
        self._charts_due = None
        samples, gpus = self.session.live_samples, self.session.gpu_samples
        if samples or gpus:
            # The interval runs from the first draw with data: the empty one at mount
            # must not hold back the first samples.
            self._charts_at = time.monotonic()
        for name, series in chart_series(samples).items():
            self.query_one(charts[name], Chart).set_series(series)
        if gpus:
            self.query_one("#chart-gpu", Chart).set_series(gpu_series(gpus))

    def _show_live(self) -> None:
        samples = self.session.live_samples
        gpus = self.session.gpu_samples
        # Draw only when something new arrived: the watcher also fires for requests,
        # and a chart redraw (plotext) is the costly part of an update.
        key = (len(samples), samples[-1].t if samples else None, len(gpus),
               gpus[-1].t if gpus else None)  # fmt: skip
        if key != self._live_key:
            self._live_key = key
            self._now = now_figures(samples)
            self._show_now()
            charts = {"tok": "#chart-tok", "commit": "#chart-commit", "step": "#chart-step"}
            colors = self.query_one("#chart-tok", Chart).colors()
            caption = live_caption(samples, colors)
            gpu = gpu_text(gpus)
            if gpu and self.has_class("-narrow"):
                caption.append(f"  {gpu}")
            if caption.plain != getattr(self, "_caption", None):
                self._caption = caption.plain
                self.query_one("#live-caption", Static).update(caption, layout=False)
            # Whether there is a GPU chart, and its figures, show at once; its lines
            # follow at the charts' rate.
            self.set_class(bool(gpus), "-gpu")
            if gpus:
                self.query_one("#chart-gpu", Chart).chart_title = gpu or "GPU"
            self._charts_due = charts
            # The series are built at the charts' own rate, not per sample.
            wait = chart_interval(samples, self._chart_hz, self._chart_columns()) - (
                time.monotonic() - self._charts_at
            )
            if wait <= 0:
                self._draw_charts()
            elif self._charts_timer is None:
                self._charts_timer = self.set_timer(wait, self._draw_charts)
        # Rebuild the requests table only when a request was added: a live sample arrives
        # every second or two, and a cleared DataTable forces a full layout refresh.
        requests = self.session.requests
        shown = requests[-20:]
        key = (len(requests), id(shown[-1]) if shown else None)
        if key == getattr(self, "_requests_key", None):
            return
        self._requests_key = key
        table = self.query_one("#requests", DataTable)
        table.clear()
        for r in reversed(shown):
            table.add_row(*request_row(r))
