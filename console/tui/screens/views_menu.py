"""`g`: every view as a button, for a mouse or a narrow footer.

The footer drops the view keys when a view's own actions fill the row; it then shows
`g Views` instead, which opens this menu: one click to any view, one to close.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.tui import keys
from console.tui.state import session_of

# (mode name, key id): the views in the order of their keys in the footer.
VIEW_KEYS = (("dashboard", "dashboard"), ("service", "service"), ("logs", "logs"),
             ("flags", "flags"), ("prompt", "prompt-lab"), ("sweeps", "sweeps"),
             ("history", "history"))  # fmt: skip


class ViewsScreen(ModalScreen[str | None]):
    """Answers the mode to switch to, or None when closed."""

    BINDINGS = keys.bindings("views")
    DEFAULT_CSS = """
    ViewsScreen #views-dialog { width: 30; }
    ViewsScreen #views-dialog Button { width: 100%; margin: 0; }
    ViewsScreen #views-close { margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        keymap = session_of(self).keymap
        with Vertical(id="views-dialog", classes="dialog"):
            yield Static("Views", classes="dialog-title")
            for mode, key_id in VIEW_KEYS:
                spec = keys.BY_ID[key_id]
                label = f"{keys.display_keys(spec, keymap)}  {spec.description}"
                yield Button(label, id=f"views-{mode}", compact=True)
            yield Button("Close (Esc)", id="views-close", variant="primary", compact=True)

    def on_key(self, event: events.Key) -> None:
        # Each button shows its view's key: the key chooses it here too (a modal screen
        # keeps the app's view bindings from it).
        keymap = session_of(self).keymap
        for mode, key_id in VIEW_KEYS:
            bound = keymap.get(key_id, keys.BY_ID[key_id].keys)
            if event.key in {k.strip() for k in bound.split(",")}:
                event.stop()
                self.dismiss(mode)
                return

    def on_button_pressed(self, event: Button.Pressed) -> None:
        name = (event.button.id or "").removeprefix("views-")
        self.dismiss(None if name == "close" else name)

    def action_close(self) -> None:
        self.dismiss(None)
