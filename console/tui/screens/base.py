"""What every view shares: the status bar on top, the footer of keys at the bottom."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from console.tui.widgets.status_bar import StatusBar


class ViewScreen(Screen):
    """A top-level view; subclasses yield their body from `compose_body`."""

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()
