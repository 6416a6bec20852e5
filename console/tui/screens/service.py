"""`s`: start, stop, restart and roll back, and follow each to ready or failure.

A failed start stays on screen with what an operator needs to act: the exit code, the
last log lines the engine printed, and rollback one key away. Every button asks the app
(`RunAction`) for what its key does, which calls the same `EngineService` method the
CLI's start/stop/restart/rollback commands call.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, RichLog, Static

from console.tui.messages import EngineActionName, RunAction
from console.tui.screens.base import ViewScreen
from console.tui.state import watch_state
from console.tui.widgets.line_log import LineLog
from console.tui.widgets.status_bar import state_text

BUTTON_ACTIONS: dict[str, EngineActionName] = {
    "svc-start": "start",
    "svc-restart": "restart",
    "svc-stop": "stop",
    "svc-rollback": "rollback",
}


class ServiceScreen(ViewScreen):
    HOME = "#svc-events"

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="svc-top"):
            yield Static("", id="svc-info", classes="panel")
            with Vertical(id="svc-buttons", classes="panel"):
                yield Button("Start (S)", id="svc-start", variant="success")
                yield Button("Restart (R)", id="svc-restart", variant="warning")
                yield Button("Stop (X)", id="svc-stop", variant="error")
                yield Button("Roll back (B)", id="svc-rollback")
        with Vertical(id="svc-failure", classes="panel"):
            yield Static("", id="failure-head")
            # The engine's last lines: each a line, cut with "…" where the panel is narrow.
            yield LineLog(id="failure-log", markup=False, highlight=False, wrap=False)
        yield RichLog(id="svc-events", markup=False, highlight=False, wrap=True)

    def on_mount(self) -> None:
        self.query_one("#svc-events", RichLog).border_title = "lifecycle"
        self.query_one("#svc-info").border_title = "service"
        self.query_one("#svc-failure").border_title = "engine failed"
        self._failure_shown: tuple | None = None
        for button_id, action in BUTTON_ACTIONS.items():  # the key in force, remaps included
            button = self.query_one(f"#{button_id}", Button)
            button.label = f"{str(button.label).split(' (')[0]} ({self.key_for(action)})"
        for name in ("status", "running"):
            watch_state(self, name, lambda _=None: self._show())
        watch_state(self, "lifecycle", lambda _=None: self._show())
        # The app keeps the log (event_log.py): lines from before this view first opened
        # show too.
        self._logged = 0
        watch_state(self, "events_version", lambda _=None: self._show_log())
        self._show_log()
        self._show()

    def _show_log(self) -> None:
        events = getattr(self.app, "events", None)
        if events is None:
            return
        restart, lines = events.since(self._logged)
        log = self.query_one("#svc-events", RichLog)
        if restart:  # more came than the log keeps: write what it has
            log.clear()
        for line in lines:
            log.write(line)
        self._logged = events.total

    def _failure(self) -> tuple[int | None, str, tuple[str, ...]] | None:
        session = self.session
        event, status = session.lifecycle, session.status
        if (
            event is not None
            and event.state == "failed"
            and (status is None or status.state == "failed" or session.running)
        ):
            return event.exit_code, event.message, event.log_tail
        if status is not None and status.state == "failed":
            return status.exit_code, status.message, status.log_tail
        return None

    def _show(self) -> None:
        session = self.session
        state, detail = state_text(session)
        status = session.status
        info = Text()
        info.append(f"{session.host}", style="bold")
        info.append(f"   {state}{' ' + detail if detail else ''}\n")
        if status is not None:
            info.append(f"engine {status.engine}, {status.supervisor} supervisor")
            info.append(f", pid {status.pid}" if status.pid else "")
            info.append(f", port {status.port}\n" if status.port else "\n")
            if status.message:
                info.append(f"{status.message}\n")
            if status.config is not None:
                info.append("launch: " + " ".join(status.config.argv[-12:]), style="dim")
        self.query_one("#svc-info", Static).update(info)
        running = bool(session.running)
        ready_or_up = state in ("ready", "starting", "loading")
        self.query_one("#svc-start", Button).disabled = running or ready_or_up
        self.query_one("#svc-stop", Button).disabled = running or state == "stopped"
        self.query_one("#svc-restart", Button).disabled = running
        self.query_one("#svc-rollback", Button).disabled = running
        failure = self._failure()
        panel = self.query_one("#svc-failure")
        panel.display = failure is not None
        if failure is not None and failure != self._failure_shown:
            self._failure_shown = failure
            code, message, tail = failure
            # A crash after ready is not a failed start: the title says which it was.
            kind = getattr(self.session, "failure_kind", "")
            self.query_one("#svc-failure").border_title = {
                "start": "failed start", "crash": "engine crashed"
            }.get(kind, "engine failed")  # fmt: skip
            head = Text()
            head.append(f"exit code {code if code is not None else 'unknown'}", style="bold")
            head.append(f": {message}\n" if message else "\n")
            start, rollback = self.key_for("start"), self.key_for("rollback")
            head.append(f"Press {rollback} to roll back to the last-good flags, or {start} to "
                        "start again.")  # fmt: skip
            self.query_one("#failure-head", Static).update(head)
            log = self.query_one("#failure-log", LineLog)
            log.clear()
            for line in tail[-30:]:
                log.write_line(line)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        action = BUTTON_ACTIONS.get(event.button.id or "")
        if action is not None:
            self.request(RunAction(action))
