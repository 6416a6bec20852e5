"""Before a host is open: pick a profile or ssh-config host, or type a destination.

Also where a refused connection stays visible (a changed host key, an unreachable host),
so the reason is on screen and not only in a notification that fades. A pick is posted
to the app as `ConnectTo`; the app answers through `show_message` and `show_picker`.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from console.hosts import connect_targets
from console.tui.messages import ConnectTo, send
from console.tui.state import session_of
from console.tui.widgets.footer import ConsoleFooter
from console.tui.widgets.text_field import TextField


class ConnectScreen(Screen):
    def __init__(self) -> None:
        super().__init__()
        self._picker_shown = False
        self._want_picker = False
        self._message = ""
        self._mounted = False

    def compose(self) -> ComposeResult:
        with Vertical(id="connect"):
            yield Static("specconsole", id="connect-title")
            yield Static("", id="connect-message")
            yield Static("Hosts (profiles and ~/.ssh/config):", id="picker-label")
            yield OptionList(id="picker")
            yield TextField(placeholder="or type a profile, user@host or ssh alias", id="typed")
        yield ConsoleFooter()

    def on_mount(self) -> None:
        session = session_of(self)
        self._mounted = True
        if self._message:
            self.show_message(self._message)
        if session.host and not session.connect_problem and not self._want_picker:
            self.show_message(self._message or f"Connecting to {session.host}…")
            self.query_one("#picker").display = False
            self.query_one("#picker-label").display = False
            self.query_one("#typed").display = False
        else:
            self._fill_picker()

    def show_message(self, text: str) -> None:
        self._message = text
        if self._mounted:
            self.query_one("#connect-message", Static).update(text)

    def show_picker(self) -> None:
        self._want_picker = True
        if self._mounted:
            self._fill_picker()

    def _fill_picker(self) -> None:
        picker = self.query_one("#picker", OptionList)
        if not self._picker_shown:
            for target, description in connect_targets():
                picker.add_option(Option(f"{target}  —  {description}", id=target))
            self._picker_shown = True
            if picker.option_count:
                picker.highlighted = 0
        for node in ("#picker", "#picker-label", "#typed"):
            self.query_one(node).display = True
        picker.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            send(self, ConnectTo(event.option.id))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            send(self, ConnectTo(event.value.strip()))
