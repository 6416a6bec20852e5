"""`?`: every binding with its id, keys (after remaps) and what it does, and where to
remap it, so a user never has to read the source to find a key."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from console.tui import keys
from console.tui.settings import settings_path
from console.tui.state import session_of


class KeysScreen(ModalScreen[None]):
    BINDINGS = keys.bindings("keys")

    def compose(self) -> ComposeResult:
        with Vertical(id="keys-dialog", classes="dialog"):
            yield Static("Keys", classes="dialog-title")
            yield DataTable(id="keys-table", cursor_type="row", zebra_stripes=True)
            hint = (
                f"Remap by id in the [keys] table of {settings_path()}, "
                'e.g. dashboard = "1". Also: ctrl+p or : opens the command palette.'
            )
            yield Static(Text(hint), id="keys-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("Where", "Keys", "Does", "Id")
        keymap = session_of(self).keymap
        for spec in keys.KEYS:
            where = "everywhere" if spec.scope == "app" else spec.scope
            table.add_row(where, keys.display_keys(spec, keymap), spec.description, spec.id)
        table.focus()
