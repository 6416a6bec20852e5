"""The line at the top of every view: host, engine, state, the running action, the link.

It watches the session state (`console.tui.state`), so every screen shows the same
truth without asking for it; a down link becomes a banner here while the rest of the UI
keeps working.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import LoadingIndicator, Static

from console.service.state_text import service_state
from console.tui.state import session_of, watch_state
from console.tui.widgets.unchanged import show

STATE_COLOR = {"ready": "success", "failed": "error", "stopped": "warning", "stopping": "warning"}


def state_text(app) -> tuple[str, str]:
    """(state, detail) from the newest of the polled status and the lifecycle event."""
    return service_state(app.status, app.lifecycle, bool(app.running))


class StatusBar(Horizontal):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; }
    StatusBar #status-text { width: 1fr; padding: 0 1; }
    StatusBar #action { width: auto; padding: 0 1; color: $accent; display: none; }
    StatusBar LoadingIndicator { width: 6; height: 1; display: none; }
    StatusBar.busy #action, StatusBar.busy LoadingIndicator { display: block; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="status-text")
        yield LoadingIndicator()
        yield Static(id="action")

    def on_mount(self) -> None:
        for name in ("status", "lifecycle", "running", "link_down"):
            watch_state(self, name, lambda _=None: self.update_view())
        self.update_view()

    def update_view(self) -> None:
        if not self.query("#status-text"):
            return  # the app quit while this bar was mounting: its children are gone
        session = session_of(self)
        service = session.service
        state, detail = state_text(session)
        text = Text()
        text.append(f"{session.host or '-'}", style="bold")
        if service is not None:
            text.append(f"  {service.profile.engine}")
        text.append("  ")
        # Rich styles cannot read CSS variables: colour by the theme's own values.
        colors = self.app.theme_variables
        text.append(state, style=f"bold {colors.get(STATE_COLOR.get(state, 'primary'), '')}")
        if detail:
            text.append(f" {detail}")
        status = session.status
        if status is not None and status.pid:
            # While a (re)start is under way the polled pid is the old process's until
            # the poll catches up: say it is pending rather than show a dead pid.
            stale = state in ("starting", "loading", "stopping") and status.state != state
            text.append("  pid …" if stale else f"  pid {status.pid}")
        if status is not None and status.port:
            text.append(f"  port {status.port}")
        if session.link_down:
            text.append(f"  ⚠ {session.link_down}", style=f"bold {colors.get('error', '')}".strip())
        show(self.query_one("#status-text", Static), text)
        self.set_class(bool(session.running), "busy")
        # Textual's indicator repaints 16 times a second even while hidden: it animates
        # only while an action runs (an idle console otherwise wakes 16 times a second).
        indicator = self.query_one(LoadingIndicator)
        indicator.auto_refresh = 1 / 16 if session.running else None
        show(self.query_one("#action", Static),
             f"{session.running}… (C cancels)" if session.running else "")  # fmt: skip
