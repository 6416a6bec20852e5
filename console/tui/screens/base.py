"""What every view shares: the status bar on top, the footer of keys at the bottom, the
session state to read (`session`) and the way to ask the app for something (`request`).

The focus rule every view keeps: letter keys (views, S R X B C, a view's own actions)
work from anywhere except while a text field is being edited; Escape always leaves a
field (to the view's `HOME`, its main list or table); and once a run starts, the focus
leaves the form, so a `C` pressed to cancel it cancels instead of typing into a field.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Input, Select

from console.tui.messages import Request, send
from console.tui.state import SessionState, session_of
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.status_bar import StatusBar

# Size classes every view's layout (app.tcss) is written against: 80x24 (as htop is),
# 100x30 and 160x48 are the designed sizes; in between takes the smaller design.
SHORT_BELOW = 30  # rows: below this, "-short" (charts and spare panels give way)
TALL_FROM = 40  # rows: from this on, "-tall"; between the two, neither
NARROW_BELOW = 100  # columns: below this, "-narrow" (side-by-side panels stack)
WIDE_FROM = 140  # columns: from this on, "-wide"


class ViewScreen(Screen):
    """A top-level view; subclasses yield their body from `compose_body`."""

    KEY_SCOPE: ClassVar[str] = ""  # the scope of its bindings in keys.py ("" = none)
    HOME: ClassVar[str] = ""  # the widget the focus goes to when it leaves a field

    @property
    def session(self) -> SessionState:
        return session_of(self)

    def request(self, message: Request) -> None:
        """Ask the app (it bubbles up there); its answers come back to this screen."""
        send(self, message)

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield from self.compose_body()
        yield ConsoleFooter()

    def on_resize(self, event: events.Resize) -> None:
        width, height = event.size
        self.set_class(height < SHORT_BELOW, "-short")
        self.set_class(height >= TALL_FROM, "-tall")
        self.set_class(width < NARROW_BELOW, "-narrow")
        self.set_class(width >= WIDE_FROM, "-wide")
        # Bordered inputs take three rows; below the tall design they take one.
        for widget in self.query("Input, Select"):
            if isinstance(widget, (Input, Select)) and not widget.has_class("always-compact"):
                widget.compact = height < TALL_FROM

    def compose_body(self) -> ComposeResult:
        yield from ()

    def leave_form(self) -> None:
        """Move the focus out of any field, to the view's main list (or nowhere)."""
        # Screen.set_focus, not Widget.focus: the latter moves the focus only after the
        # keys already queued, which would still land in the field being left.
        self.set_focus(self.query_one(self.HOME) if self.HOME else None)

    def can_run(self, action: str, params: tuple[object, ...] = ()) -> bool:
        """Whether a view action can run now; the palette lists only those that can."""
        return True

    def key_for(self, key_id: str) -> str:
        """The key in force for binding `key_id` (after remaps and browser-safe keys)."""
        from console.tui import keys

        return keys.display_keys(keys.BY_ID[key_id], self.session.keymap)
