"""`d`: is the service up, with which key flags, and how fast is it decoding right now.

State and load progress come from the lifecycle events and the status poll, the key
flags from the launch config, the schema's roles and the engine's /get_server_info,
the charts and the request table from the live series. Every figure in the table says
how it was measured (server-side or client-side, streamed or not, context, text type).
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, ProgressBar, Static

from console.measure.records import LiveSample, RequestSample
from console.service.flag_view import read_flag_view
from console.tui import keys
from console.tui.screens.base import ViewScreen
from console.tui.state import watch_state
from console.tui.widgets.chart import Chart, ChartSeries
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


def chart_series(samples: list[LiveSample]) -> dict[str, list[ChartSeries]]:
    """The three live charts' lines, x in seconds before the newest sample."""
    if not samples:
        return {"tok": [], "commit": [], "step": []}
    newest = max(s.t for s in samples)

    def line(label: str, get) -> list[ChartSeries]:
        points = [(s.t - newest, get(s)) for s in samples if get(s) is not None]
        return [ChartSeries(label, points)] if points else []

    return {
        "tok": line("tok/s", lambda s: s.tok_s),
        "commit": line("commit", lambda s: s.commit_len),
        "step": line("step ms", lambda s: None if s.step_time_s is None else s.step_time_s * 1000),
    }


def live_caption(samples: list[LiveSample]) -> str:
    """Where the charted figures come from (log lines, /metrics, measured requests)."""
    if not samples:
        return "live series: no samples yet (the engine has not decoded since the console opened)"
    # Which sources, not how many samples: the caption then changes only when a source
    # appears, and an unchanged caption costs no relayout of the screen per sample.
    names = {
        "log": "engine log lines",
        "metrics": "/metrics deltas",
        "request": "measured requests",
    }
    sources = sorted({s.source for s in samples})
    return "live series from " + ", ".join(names.get(k, k) for k in sources)


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
    def compose_body(self) -> ComposeResult:
        with Horizontal(id="dash-top"):
            with Vertical(id="dash-state", classes="panel"):
                yield Static("", id="state-line")
                yield ProgressBar(total=100, show_eta=False, id="load-progress")
                yield Static("", id="state-hint")
            with Vertical(id="dash-flags", classes="panel"):
                yield DataTable(id="flags-table", show_cursor=False)
        hz = self.session.settings.chart_hz
        with Horizontal(id="dash-charts"):
            yield Chart("decode tok/s", x_label="s before the latest sample", hz=hz, id="chart-tok")
            yield Chart(
                "commit length", x_label="s before the latest sample", hz=hz, id="chart-commit"
            )
            yield Chart(
                "step time (ms)", x_label="s before the latest sample", hz=hz, id="chart-step"
            )
        yield Static("", id="live-caption")
        yield DataTable(id="requests", show_cursor=False, zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#dash-flags").border_title = "key flags"
        self.query_one("#dash-state").border_title = "service"
        flags = self.query_one("#flags-table", DataTable)
        flags.add_column("flag", width=22)
        flags.add_column("value", width=36)
        flags.add_column("from", width=13)
        requests = self.query_one("#requests", DataTable)
        requests.border_title = "last requests"
        for label, width in REQUEST_COLUMNS:
            requests.add_column(label, width=width)
        for name in ("status", "lifecycle", "running"):
            watch_state(self, name, lambda _=None: self._show_state())
        watch_state(self, "server_info", lambda _=None: self._load_flags())
        watch_state(self, "live_version", lambda _=None: self._show_live())
        self._show_state()
        self._show_live()
        self._load_flags()

    def _show_state(self) -> None:
        session = self.session
        state, detail = state_text(session)
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
            "stopped": f"The engine is stopped. Press {start_key} to start it.",
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
        for key_flag in view.key_flags():
            table.add_row(*key_flag.as_tuple())

    def _show_live(self) -> None:
        caption = live_caption(self.session.live_samples)
        if caption != getattr(self, "_caption", None):
            self._caption = caption
            self.query_one("#live-caption", Static).update(caption)
        lines = chart_series(self.session.live_samples)
        self.query_one("#chart-tok", Chart).set_series(lines["tok"])
        self.query_one("#chart-commit", Chart).set_series(lines["commit"])
        self.query_one("#chart-step", Chart).set_series(lines["step"])
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
