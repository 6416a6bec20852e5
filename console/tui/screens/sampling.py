"""The session's sampling: what every measurement of this console session runs at.

The host profile's `[sampling]` (greedy by default) is where a session starts; the
dialog changes it for the session only, as `--temperature/--top-p/--top-k/--seed` do for
one command, and the profile on disk keeps its own. Each field is read by
`console.sampling.from_typed`, the command line's checks: a bad value keeps the dialog
open with one sentence and changes nothing. Blank keeps the current value.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.errors import ConfigError
from console.sampling import Sampling, from_typed
from console.tui import keys
from console.tui.widgets.form import field
from console.tui.widgets.text_field import TextField

# field id -> (label, Sampling field)
FIELDS = {
    "sampling-temperature": ("temperature (0: greedy)", "temperature"),
    "sampling-top-p": ("top-p", "top_p"),
    "sampling-top-k": ("top-k (-1: none)", "top_k"),
    "sampling-seed": ("base seed", "seed"),
}


class SamplingScreen(ModalScreen[Sampling | None]):
    """Dismissed with the new sampling, or None when cancelled."""

    BINDINGS = keys.bindings("sampling")
    AUTO_FOCUS = "#sampling-temperature"
    DEFAULT_CSS = """
    SamplingScreen #sampling-fields { height: auto; }
    SamplingScreen .field { width: 1fr; height: auto; }
    SamplingScreen #sampling-error { color: $error; height: auto; margin-top: 1; }
    """

    def __init__(self, current: Sampling) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(Text("Sampling for this session's measurements", style="bold"),
                         id="question")  # fmt: skip
            yield Static(
                f"Now {self.current.label}. Acceptance falls with temperature: measure at "
                "your traffic's settings. The host profile keeps its own; blank keeps a "
                "value.",
                id="sampling-now",
            )
            with Horizontal(id="sampling-fields"):
                for field_id, (label, name) in FIELDS.items():
                    value = getattr(self.current, name)
                    yield field(label, TextField(f"{value:g}", id=field_id))
            yield Static("", id="sampling-error")
            with Horizontal(classes="buttons"):
                yield Button("Apply", id="sampling-apply", variant="primary")
                yield Button("Cancel", id="sampling-cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "sampling-apply":
            self.action_apply()
        else:
            self.dismiss(None)

    def on_input_submitted(self, _event: TextField.Submitted) -> None:
        self.action_apply()

    def action_apply(self) -> None:
        texts = {name: self.query_one(f"#{field_id}", TextField).value
                 for field_id, (_label, name) in FIELDS.items()}  # fmt: skip
        try:
            chosen = from_typed(self.current, **texts)
        except ConfigError as exc:
            self.query_one("#sampling-error", Static).update(str(exc))
            return
        self.dismiss(chosen)

    def action_cancel(self) -> None:
        self.dismiss(None)
