"""A labelled form field: the label above its input, as the prompt lab and sweep forms
lay out every field."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Label


def field(label: str, widget: Widget, *, wide: bool = False) -> Vertical:
    return Vertical(Label(label), widget, classes="field wide" if wide else "field")
