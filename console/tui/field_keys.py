"""Tab, shift+tab and Escape in a text field, handled before the next key is delivered.

Textual binds tab to the screen, and the screens bind Escape, so either is handled only
once it has bubbled up from the focused field. The app hands keys out faster than that:
in a burst (fast typing, a paste or a held key through tmux) every key after the tab had
already been given to the field it left, so "128<tab>code" typed "128code" into one
field. As priority bindings of the app they are handled in arrival order, and the focus
has moved before the next key is handed out.

Tab moves the focus this way from any widget (the burst may start on a list or a select)
except a text area that indents with it; Escape leaves only a text field and otherwise
steps aside (SkipAction), so lists, modals and the command palette keep their own Escape.
"""

from __future__ import annotations

from textual.actions import SkipAction
from textual.app import App
from textual.widget import Widget
from textual.widgets import Input, TextArea

from console.tui.screens.base import ViewScreen


def editing(widget: Widget | None) -> bool:
    """Whether keys typed now go into text: a field, or a text area that is not read-only."""
    return isinstance(widget, Input) or (isinstance(widget, TextArea) and not widget.read_only)


def _indents(widget: Widget | None) -> bool:
    return isinstance(widget, TextArea) and widget.tab_behavior == "indent"


class FieldKeys(App):
    """The app's actions for the field keys (keys.py binds them, with priority)."""

    def action_next_field(self) -> None:
        if _indents(self.focused):
            raise SkipAction()
        self.screen.focus_next()

    def action_previous_field(self) -> None:
        if _indents(self.focused):
            raise SkipAction()
        self.screen.focus_previous()

    def action_leave_field(self) -> None:
        screen = self.screen
        if not editing(self.focused) or not isinstance(screen, ViewScreen):
            raise SkipAction()
        screen.leave_form()
