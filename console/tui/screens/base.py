"""What every view shares: the status bar on top, the footer of keys at the bottom, the
session state to read (`session`) and the way to ask the app for something (`request`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from console.tui.messages import Request, send
from console.tui.state import SessionState, session_of
from console.tui.widgets.status_bar import StatusBar


class ViewScreen(Screen):
    """A top-level view; subclasses yield their body from `compose_body`."""

    @property
    def session(self) -> SessionState:
        return session_of(self)

    def request(self, message: Request) -> None:
        """Ask the app (it bubbles up there); its answers come back to this screen."""
        send(self, message)

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()
