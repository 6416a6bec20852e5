"""Update a `Static` only when what it shows changes.

A status poll (every two seconds) and a live sample (every second or two) re-render the
same words most of the time; `Static.update` with the same content still repaints the
widget, and with `layout=True` (its default) lays out the whole screen again, most of
the console's idle CPU. `show` compares with what the widget was last given."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

_SHOWN = "_console_shown"


def show(widget: Static, content: Any, *, layout: bool = True) -> bool:
    """`widget.update(content)` unless it was last given an equal `content`; True when
    it updated. Rich `Text` compares by its text and styles."""
    if hasattr(widget, _SHOWN) and getattr(widget, _SHOWN) == content:
        return False
    setattr(widget, _SHOWN, content)
    widget.update(content, layout=layout)
    return True
