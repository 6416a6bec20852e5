"""The one chart interface the screens use: series in, widget out.

Screens call `Chart.set_series(...)` as often as data arrives; the widget redraws only
then, and at most `hz` times a second (a one-shot timer picks up the latest data of a
burst), so a burst of samples never floods the UI thread and an idle chart costs nothing:
no timer ticks while no sample arrives. How lines are drawn is `plotext_render`'s
business: swapping the drawing library means changing that module only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.color import Color
from rich.segment import Segment
from rich.text import Text
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from console.tui.widgets.plotext_render import RGB, ChartSeries, render_lines

__all__ = ["Chart", "ChartSeries"]


class Chart(Widget):
    DEFAULT_CSS = """
    Chart { height: 12; min-height: 6; }
    """

    def __init__(
        self,
        title: str = "",
        *,
        x_label: str = "",
        empty: str = "no data yet",
        hz: float = 2.0,
        legend: bool | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.chart_title = title
        self.x_label = x_label
        self.empty = empty
        self._hz = hz
        self.legend = legend
        self._series: tuple[ChartSeries, ...] = ()
        self._last_draw = 0.0
        self._pending: Timer | None = None  # the trailing draw of a burst, when one is due
        self._cache: tuple[tuple, Text] | None = None
        self._strips: tuple[tuple, list[Strip]] | None = None  # the cached text's lines
        self.draws = 0  # renders that ran plotext (the idle-cost tests count them)

    def on_mount(self) -> None:
        self.watch(self.app, "theme", lambda _: self._invalidate(), init=False)

    def set_series(self, series: Sequence[ChartSeries]) -> None:
        """Replace the series. Drawn now if the last draw is old enough, else once when it
        is (leading and trailing edge), so a burst costs at most `hz` draws a second.
        The same series again draws nothing."""
        series = tuple(series)
        if series == self._series:
            return
        self._series = series
        wait = 1.0 / self._hz - (time.monotonic() - self._last_draw)
        if wait <= 0:
            self._invalidate()
        elif self._pending is None:
            self._pending = self.set_timer(wait, self._invalidate)

    def _flush(self) -> None:
        """Draw the pending series now (the bench times one update end to end)."""
        if self._pending is not None:
            self._pending.stop()
        self._invalidate()

    def _invalidate(self) -> None:
        self._pending = None
        self._last_draw = time.monotonic()
        self._cache = None
        self._strips = None
        self.refresh()

    def colors(self) -> list[RGB]:
        """The theme's series colours, in slot order (a screen's shared legend uses them)."""
        return self._colors()

    def _colors(self) -> list[RGB]:
        variables = self.app.theme_variables
        out: list[RGB] = []
        for name in ("primary", "accent", "success", "secondary", "warning"):
            value = variables.get(name)
            if value:
                try:
                    triplet = Color.parse(value).get_truecolor()
                except Exception:
                    continue
                out.append((triplet.red, triplet.green, triplet.blue))
        return out or [(78, 161, 211)]

    def render(self) -> Text:
        """The chart as text (kept for callers that want it whole; the screen itself
        draws through `render_line`)."""
        return self._text()

    def _text(self) -> Text:
        size = (self.content_size.width, self.content_size.height)
        if self._cache is not None and self._cache[0] == size:
            return self._cache[1]
        self.draws += 1
        text = render_lines(
            self._series,
            size[0],
            size[1],
            title=self.chart_title,
            x_label=self.x_label,
            colors=self._colors(),
            empty=self.empty,
            legend=self.legend,
        )
        self._cache = (size, text)
        self._strips = None
        return text

    def render_line(self, y: int) -> Strip:
        # The line API, with the lines cut from the chart's text once per draw: going
        # through `render()` converts the whole text to Textual content on each paint,
        # which cost as much as plotext itself (idle CPU with live charts).
        text = self._text()
        width = self.content_size.width
        if self._strips is None or self._strips[0] != (width, self.rich_style):
            base = self.rich_style
            segments = text.render(self.app.console)
            lines = Segment.split_and_crop_lines(
                segments, width, style=base, pad=True, include_new_lines=False
            )
            strips = [Strip(Segment.apply_style(line, base), width) for line in lines]
            self._strips = ((width, base), strips)
        strips = self._strips[1]
        return strips[y] if y < len(strips) else Strip.blank(width, self.rich_style)
