"""A log of text lines that never cuts a line silently.

Without wrapping, a `RichLog` renders a line as wide as the widget and drops the rest:
`... gen throughput (token/s): 10` could read as a whole figure. Here a line too wide for
the widget ends in "…" (the wrap toggle, or a wider window, shows all of it), and every
line is drawn again at the new width on a resize, so a line cut at 80 columns is whole
again at 160.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual import events
from textual.widgets import RichLog

KEEP = 10_000  # lines kept to draw again (the log view's own buffer is what it filters)


class LineLog(RichLog):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("min_width", 1)  # as wide as the widget, never RichLog's 78
        super().__init__(*args, **kwargs)
        self._raw: deque[str] = deque(maxlen=self.max_lines or KEEP)
        self._width = 0

    @property
    def kept(self) -> list[str]:
        """The lines as written (each shown whole, or cut with "…" at the width)."""
        return list(self._raw)

    def write_line(self, line: str, *, scroll_end: bool | None = None) -> None:
        self._raw.append(line)
        self._draw(line, scroll_end)

    def _draw(self, line: str, scroll_end: bool | None) -> None:
        if self.wrap:
            self.write(line, scroll_end=scroll_end)
            return
        width = self.scrollable_content_region.width or None
        text = Text(line, no_wrap=True, overflow="ellipsis", end="")
        self.write(text, width=width and min(width, text.cell_len), scroll_end=scroll_end)

    def clear(self) -> LineLog:
        self._raw.clear()
        super().clear()
        return self

    def on_resize(self, event: events.Resize) -> None:
        width = self.scrollable_content_region.width
        if not width or width == self._width:
            return
        first, self._width = self._width == 0, width
        if not first:
            self.redraw_lines()

    def redraw_lines(self) -> None:
        """Draw every kept line again at the current width, the scroll kept."""
        at_end = self.scroll_y >= self.max_scroll_y
        y = self.scroll_y
        RichLog.clear(self)
        for line in self._raw:
            self._draw(line, False)
        if at_end:
            self.scroll_end(animate=False, immediate=False, x_axis=False)
        else:
            self.scroll_to(y=y, animate=False)
