"""Prose wrapped at word boundaries, with long paths and identifiers broken where they
read as pieces.

Rich wraps at spaces but folds a word wider than the line at any cell, so a flag's help
showed `/root/.cache/hugg` / `ingface/hub` and `--speculative-num-dra` / `ft-tokens`, and
could split a number (`1638` / `4`). Here a line breaks at a space where one fits; a
single token wider than the line breaks after a `/`, `-` or `_` (the last that fits),
else after any other character that is not inside a number. Only a run of digits wider
than the whole line is cut where the line ends, since nothing better exists.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import Static

BREAK_AFTER = "/-_"


def _token_cut(token: str, width: int) -> int:
    """Where to end the first line of a token wider than `width` (1..width)."""
    for end in range(width, 0, -1):
        if token[end - 1] in BREAK_AFTER:
            return end
    for end in range(width, 0, -1):
        if not (token[end - 1].isdigit() and token[end].isdigit()):
            return end
    return width


def line_spans(line: str, width: int) -> list[tuple[int, int]]:
    """(start, end) offsets of `line` (no newline in it) cut into lines of at most
    `width` cells: at spaces (dropped at a break), a token wider than a line as above."""
    if width <= 0 or len(line) <= width:
        return [(0, len(line))]
    spans: list[tuple[int, int]] = []
    start: int | None = None
    end = 0
    for word in re.finditer(r"\S+", line):
        ws, we = word.span()
        if start is not None and we - start <= width:
            end = we  # the word fits on the current line
            continue
        if start is not None:
            spans.append((start, end))
        elif we <= width:
            ws = 0  # the first line keeps its indent
        while we - ws > width:
            cut = ws + _token_cut(line[ws:we], width)
            spans.append((ws, cut))
            ws = cut
        start, end = ws, we
    if start is not None:
        spans.append((start, end))
    return spans or [(0, 0)]


def wrap_text(text: Text, width: int) -> Text:
    """`text` (its styles kept) with its lines cut for `width` as `line_spans` says."""
    out: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        out.extend(line[a:b] for a, b in line_spans(plain, width))
    return Text("\n").join(out)


class WrappedText(Static):
    """A Static whose text is wrapped by `wrap_text` at its current width."""

    def __init__(self, content: Text | str = "", **kwargs) -> None:
        super().__init__("", **kwargs)
        self._text = Text(content) if isinstance(content, str) else content

    def update(self, content: Text | str = "", *, layout: bool = True) -> None:  # type: ignore[override]
        self._text = Text(content) if isinstance(content, str) else content
        self.refresh(layout=layout)

    @property
    def text(self) -> Text:
        return self._text

    def render(self) -> Text:
        width = self.scrollable_content_region.width or self.content_region.width
        return wrap_text(self._text, width)
