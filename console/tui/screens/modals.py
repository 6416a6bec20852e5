"""Modals that ask before something irreversible (confirm an action, trust a host key),
and one that shows a result to read.

An unknown SSH host key is never accepted silently: the modal shows the fingerprint and
the file it will be written to, and Cancel has the focus, so Enter alone refuses.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, ScrollableContainer, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.transport import HostKeyInfo
from console.tui import keys


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = keys.bindings("confirm")
    AUTO_FOCUS = "#no"  # the safe answer has the focus: Enter alone never confirms

    def __init__(self, question: str, detail: str = "", *, diff: bool = False) -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.diff = diff

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text(self.question, style="bold"), id="question")
            if self.detail:
                body = (
                    Syntax(self.detail, "diff", theme="ansi_dark", word_wrap=True)
                    if self.diff
                    else Text(self.detail)
                )
                with VerticalScroll(id="detail"):
                    yield Static(body)
            with Horizontal(classes="buttons"):
                yield Button("Yes (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class InfoScreen(ModalScreen[None]):
    """A result to read (a before/after comparison): any of Enter, Escape or OK closes it."""

    BINDINGS = keys.bindings("info")
    AUTO_FOCUS = "#ok"
    # A before/after table is wider than a question: as wide as the terminal allows (its
    # width is in app.tcss, where .dialog would override it), so each row stays on one
    # line; it scrolls sideways where even that is too narrow.
    DEFAULT_CSS = """
    InfoScreen #info-table { height: auto; overflow-x: auto; overflow-y: hidden; }
    InfoScreen #info-body { width: auto; }
    InfoScreen #info-notes { margin-top: 1; }
    """

    def __init__(self, title: str, body: str, notes: Sequence[str] = ()) -> None:
        super().__init__()
        self.title_text = title
        self.body = body  # a table: each row on one line, scrolled sideways if need be
        self.notes = list(notes)  # sentences under it, wrapped to the dialog's width

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="question")
            with VerticalScroll(id="detail"):
                with ScrollableContainer(id="info-table"):
                    yield Static(Text(self.body, no_wrap=True), id="info-body")
                if self.notes:
                    yield Static(Text("\n".join(self.notes)), id="info-notes")
            with Horizontal(classes="buttons"):
                yield Button("OK", id="ok", variant="primary")

    def on_button_pressed(self, _event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


class HostKeyScreen(ModalScreen[bool]):
    BINDINGS = keys.bindings("host key")
    # Cancel has the focus, so Enter alone never trusts a key. Textual focuses it as part
    # of composing the screen; a query in on_mount could race the screen's own mount.
    AUTO_FOCUS = "#cancel"

    def __init__(self, info: HostKeyInfo) -> None:
        super().__init__()
        self.info = info

    def compose(self) -> ComposeResult:
        info = self.info
        text = Text()
        text.append(f"The authenticity of {info.destination} can't be established.\n\n", "bold")
        text.append(f"Recorded as:  {info.known_hosts_name}\n")
        text.append(f"Key type:     {info.key_type}\n")
        text.append("Fingerprint:  ")
        text.append(f"{info.fingerprint}\n\n", "bold")
        text.append(
            "Compare the fingerprint with the host's own (ssh-keygen -lf on the host). "
            "Trusting records the key in your known_hosts; a later change is refused."
        )
        with Vertical(id="dialog", classes="dialog"):
            yield Static(text, id="hostkey")
            with Horizontal(classes="buttons"):
                yield Button("Trust and connect", id="trust", variant="warning")
                yield Button("Cancel", id="cancel", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "trust")

    def action_refuse(self) -> None:
        self.dismiss(False)
