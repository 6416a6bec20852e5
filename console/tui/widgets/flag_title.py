"""A flag's name as the Flags view's panel title: broken only after a hyphen.

A long flag name wrapped as text breaks wherever the panel ends
(`--speculative-draft-wind` / `ow-size`), which reads as two wrong names. Here the name
breaks only between its hyphenated words, each line as full as the width allows; a
single word wider than the panel ends in "…" rather than breaking inside it.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from console.tui.widgets.fitted_table import ellipsize


def name_lines(name: str, width: int) -> list[str]:
    """`name` in lines of at most `width` cells, broken only after a hyphen."""
    if width <= 0 or len(name) <= width:
        return [name]
    words: list[str] = []
    for part in name.split("-"):
        if words and not words[-1].strip("-"):
            words[-1] += part + "-"  # leading hyphens stay with the first word
        else:
            words.append(part + "-")
    words[-1] = words[-1][:-1]
    lines = [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + len(word) > width:
            lines.append("")
        lines[-1] += word
    return [ellipsize(line, width) for line in lines]


class FlagTitle(Widget):
    DEFAULT_CSS = "FlagTitle { height: auto; text-style: bold; }"
    flag: reactive[str] = reactive("", layout=True)

    def render(self) -> Text:
        if not self.flag:
            return Text("")
        return Text("\n".join(name_lines(f"--{self.flag}", self.content_region.width)))
