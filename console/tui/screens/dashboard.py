"""`d`: is the service up, with which key flags, and how fast is it decoding right now.

State and load progress come from the lifecycle events and the status poll, the key
flags from the launch config, the schema's roles and the engine's /get_server_info,
the charts and the request table from the live series. Every figure in the table says
how it was measured (server-side or client-side, streamed or not, context, text type).
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widgets import DataTable, Digits, ProgressBar, Static

from console.service.flag_view import read_flag_view
from console.tui import keys
from console.tui.screens.base import ViewScreen
from console.tui.screens.dashboard_figures import (  # noqa: F401  (tests and bench read them here)
    GAP_S,
    GPU_SLOT,
    LIVE_CHART_HZ,
    MAX_CHART_INTERVAL_S,
    NARROW_FLAG_SOURCE,
    REQUEST_COLUMNS,
    SHORT_SOURCE,
    SLOT,
    SOURCES,
    STALE_S,
    WINDOWS_S,
    NowFigures,
    age_text,
    chart_interval,
    chart_series,
    charted,
    ellipsize,
    gpu_series,
    gpu_text,
    live_caption,
    now_figures,
    now_lines,
    request_row,
    window_text,
)
from console.tui.state import watch_config, watch_state
from console.tui.widgets.chart import Chart
from console.tui.widgets.fitted_table import FittedTable
from console.tui.widgets.status_bar import state_text
from console.tui.widgets.unchanged import show


def flag_widths(width: int) -> tuple[int, int, int]:
    """The key flags' columns (flag, value, from) at a terminal `width`: the value takes
    what the panel has left (a default such as "the drafter's block size" is long), cut
    with "…" beyond 32. Below 120 columns the panel is what the 30-column state or now
    panel leaves; from 120 it is two thirds of what the 32-column readout leaves."""
    label, source = (16, 8) if width < 120 else (22, 13)
    panel = width - 30 if width < 120 else (width - 32) * 2 // 3
    # Border and padding 4, the cells' padding 6, a column for a scrollbar.
    return label, max(14, min(32, panel - 11 - label - source)), source


def wall_clock() -> float:
    """Now, for the age of the last sample (tests pin it so a snapshot has no clock)."""
    return time.time()


class DashboardScreen(ViewScreen):
    BINDINGS = keys.bindings("dashboard")
    KEY_SCOPE = "dashboard"
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
    DashboardScreen.-dshort #dash-top { height: 9; }
    DashboardScreen.-dshort #dash-charts { height: 10; }
    DashboardScreen.-dtiny #dash-top { height: 9; }
    DashboardScreen.-dtiny #dash-charts { height: 7; }
    DashboardScreen.-dtiny #state-hint { margin-top: 0; }
    DashboardScreen.-dtiny #dash-charts Chart { border: none; padding: 0 1 0 0; }
    DashboardScreen.-dnarrow #dash-now { width: 30; }
    DashboardScreen.-dnarrow #dash-state { width: 30; }
    DashboardScreen.-dnarrow #load-progress Bar { width: 20; }
    DashboardScreen.-dnarrow #dash-flags { width: 1fr; }
    DashboardScreen.-dnarrow.-ready #dash-state { display: none; }
    DashboardScreen.-dnarrow #dash-now { display: none; }
    DashboardScreen.-dnarrow.-ready #dash-now { display: block; }
    DashboardScreen.-dnarrow #chart-gpu { display: none; }
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
        yield FittedTable(REQUEST_COLUMNS, id="requests", show_cursor=False, zebra_stripes=True)

    def on_mount(self) -> None:
        self._flag_widths: tuple[int, ...] = ()
        self._live_key: tuple | None = None
        self._now: NowFigures | None = None
        self._now_shown: tuple | None = None
        self.window_s = WINDOWS_S[0]
        if not self._intact():
            return
        self.query_one("#dash-flags").border_title = "key flags"
        self.query_one("#dash-state").border_title = "service"
        self.query_one("#dash-now").border_title = "now"
        self.query_one("#requests").border_title = "last requests"
        for name in ("status", "lifecycle", "running"):
            watch_state(self, name, lambda _=None: self._show_state())
        watch_state(self, "server_info", lambda _=None: self._load_flags())
        # The key flags follow every change of the launch config: an action here ending
        # (apply, rollback) or a `specconsole set` from another shell (the polled status
        # names the new config).
        watch_state(self, "running", lambda running: None if running else self._load_flags())
        watch_config(self, self._load_flags)
        watch_state(self, "live_version", lambda _=None: self._show_live())
        # The shared legend is drawn in the theme's series colours: redraw it on a switch.
        self.watch(self.app, "theme", lambda _=None: self._recolour(), init=False)
        self._fit(self.app.size.width, self.app.size.height)  # loads the flags
        self._show_state()
        self._show_live()
        # The age of the last sample moves with the clock, not with data: one cheap text
        # update a second (and only when the shown text changes), never a chart redraw.
        self.set_interval(1.0, self._show_now)

    def _recolour(self) -> None:
        self._live_key = None
        self._show_live()

    def action_widen(self) -> None:
        """The next wider time window of the live charts (after the widest, the narrowest)."""
        self.window_s = WINDOWS_S[(WINDOWS_S.index(self.window_s) + 1) % len(WINDOWS_S)]
        self.notify(f"Live charts: {window_text(self.window_s)}.")
        self._live_key = None  # redraw now, with the new window
        self._charts_at = 0.0
        self._show_live()

    def _intact(self) -> bool:
        # False when a quit (or a host switch) arrived while this screen mounted: its
        # widgets are already being removed and there is nothing left to fill in.
        return bool(self.query("#flags-table"))

    def on_resize(self, event) -> None:
        if self._intact():
            self._fit(event.size.width, event.size.height)
            # The caption's wording follows its width, known once the layout has settled.
            self.call_after_refresh(lambda: self._intact() and self._show_live())

    def _fit(self, width: int, height: int) -> None:
        # Its own class names: the base screen sets -narrow/-short at other sizes on
        # every resize too, and Textual runs both handlers.
        self.set_class(width < 120, "-dnarrow")
        self.set_class(height < 36, "-dshort")
        self.set_class(height < 28, "-dtiny")
        widths = flag_widths(width)
        if widths != self._flag_widths:
            self._flag_widths = widths
            flags = self.query_one("#flags-table", DataTable)
            flags.clear(columns=True)
            for label, w in zip(("flag", "value", "from"), widths, strict=True):
                flags.add_column(label, width=w)
            self._load_flags()  # the labels' length depends on the width too
        # Below 36 rows the panel holds the seven key flags or a header, not both (at
        # 800x600 the tool-call parser was below its edge): the panel title says it.
        # Below 28 rows it is nine rows high, for the seven (the charts give one).
        self.query_one("#flags-table", DataTable).show_header = height >= 36

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
        show(self.query_one("#state-line", Static), line)
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
        show(self.query_one("#state-hint", Static), "" if session.running else hints.get(state, ""))

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
        narrow = self.has_class("-dnarrow")
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
        for name, series in chart_series(samples, self.window_s).items():
            self.query_one(charts[name], Chart).set_series(series)
        if gpus:
            self.query_one("#chart-gpu", Chart).set_series(gpu_series(gpus, self.window_s))

    def _show_live(self) -> None:
        samples = self.session.live_samples
        gpus = self.session.gpu_samples
        # Draw only when something new arrived: the watcher also fires for requests,
        # and a chart redraw (plotext) is the costly part of an update.
        room = self.query_one("#live-caption", Static).content_region.width or None
        key = (len(samples), samples[-1].t if samples else None, len(gpus),
               gpus[-1].t if gpus else None, room)  # fmt: skip
        if key != self._live_key:
            self._live_key = key
            self._now = now_figures(samples)
            self._show_now()
            charts = {"tok": "#chart-tok", "commit": "#chart-commit", "step": "#chart-step"}
            colors = self.query_one("#chart-tok", Chart).colors()
            gpu = gpu_text(gpus)
            beside = f"  {gpu}" if gpu and self.has_class("-dnarrow") else ""
            caption = live_caption(samples, colors, self.window_s,
                                   room and room - len(beside))  # fmt: skip
            caption.append(beside)
            # The theme is in the key: the legend's colours follow a theme change.
            if (caption.plain, self.app.theme) != getattr(self, "_caption", None):
                self._caption = (caption.plain, self.app.theme)
                self.query_one("#live-caption", Static).update(caption, layout=False)
            # Whether there is a GPU chart, and its figures, show at once; its lines
            # follow at the charts' rate.
            self.set_class(bool(gpus), "-gpu")
            if gpus:
                self.query_one("#chart-gpu", Chart).chart_title = gpu or "GPU"
            self._charts_due = charts
            # The series are built at the charts' own rate, not per sample.
            wait = chart_interval(samples, self._chart_hz, self._chart_columns(), self.window_s) - (
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
        self.query_one("#requests", FittedTable).set_rows(
            [(request_row(r), None) for r in reversed(shown)]
        )
