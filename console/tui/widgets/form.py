"""Labelled form fields: the label above its input, as the prompt lab and sweep forms
lay out every field, or beside it where a form must stay one row high."""

from __future__ import annotations

from collections.abc import Iterator

from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Label

from console.tui.widgets.text_field import TextField


def field(label: str, widget: Widget, *, wide: bool = False, narrow: bool = False) -> Vertical:
    """`narrow`: a field for a small number (a repeat count), leaving its room to others."""
    classes = "field wide" if wide else "field narrow" if narrow else "field"
    return Vertical(Label(label), widget, classes=classes)


def inline_field(label: str, placeholder: str, input_id: str) -> Iterator[Widget]:
    """A label beside a one-row input (for forms that must stay one row high at every
    size; the `always-compact` class keeps the view from giving it a border)."""
    yield Label(label, classes="inline-label")
    yield TextField(placeholder=placeholder, id=input_id, compact=True, classes="always-compact")
