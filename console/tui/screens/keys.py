"""`?`: every binding with its id, keys (after remaps) and what it does, and where to
remap it, so a user never has to read the source to find a key."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.tui import keys
from console.tui.settings import settings_path
from console.tui.state import session_of
from console.tui.widgets.fitted_table import Col, FittedTable

# Keys and ids are never cut (an id is what a remap names); what a key does may be.
COLUMNS = (Col("Where"), Col("Keys"), Col("Does", flex=True, min_width=12), Col("Id"))


class KeysScreen(ModalScreen[None]):
    BINDINGS = keys.bindings("keys")

    def compose(self) -> ComposeResult:
        with Vertical(id="keys-dialog", classes="dialog"):
            yield Static("Keys", classes="dialog-title")
            yield FittedTable(COLUMNS, id="keys-table", cursor_type="row", zebra_stripes=True)
            hint = (
                f"Remap by id in the [keys] table of {settings_path()}, "
                'e.g. dashboard = "1". Also: ctrl+p or : opens the command palette. '
                "Esc, ? or q closes this list."
            )
            yield Static(Text(hint), id="keys-hint")
            # A modal covers the footer: without a button a mouse could not close it.
            with Horizontal(classes="buttons"):
                yield Button("Close (Esc)", id="keys-close", variant="primary", compact=True)

    def on_button_pressed(self, _event: Button.Pressed) -> None:
        self.dismiss(None)

    def on_mount(self) -> None:
        table = self.query_one(FittedTable)
        keymap = session_of(self).keymap
        table.set_rows(
            [
                (
                    (
                        "everywhere" if spec.scope == "app" else spec.scope,
                        keys.display_keys(spec, keymap),
                        spec.description,
                        spec.id,
                    ),
                    None,
                )
                for spec in keys.KEYS
            ]
        )
        table.focus()
