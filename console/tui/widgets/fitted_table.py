"""A table whose figures are never cut: number columns are as wide as their widest cell,
and only text columns (provenance, host names, flag names and defaults) give way, with
an ellipsis, to the width that is left.

A fixed column width cut "128/128" to "128/12" and "16.48 [16.46–16.50]" to
"16.48 [16.46-", which reads as a different figure. Widths here are worked out again on
every resize, from the cells themselves, so the same table is right at 80, 100 and 160
columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.widgets import DataTable

ELLIPSIS = "…"


def ellipsize(text: str, width: int) -> str:
    """`text` cut to `width` cells with an ellipsis where anything was cut."""
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS if width > 0 else ""


@dataclass(frozen=True)
class Col:
    label: str
    flex: bool = False  # True: text that may be cut with an ellipsis; False: never cut
    min_width: int = 6  # a flexible column never goes narrower than this
    optional: bool = False  # dropped whole (never cut) when the figures would not fit
    # dropped whole, last first, while the first flexible column would be cut: for
    # columns the view also shows elsewhere (a flag's type and default in its panel)
    yields: bool = False
    # a flexible column that takes up to its natural width before the other flexible
    # columns share what is left (a flag's name before its value, shown whole elsewhere)
    first: bool = False


class FittedTable(DataTable):
    def __init__(self, columns: Sequence[Col] = (), **kwargs) -> None:
        super().__init__(**kwargs)
        self._cols: list[Col] = list(columns)
        self._rows: list[tuple[tuple, object]] = []  # (cells, key) as given

    def set_columns(self, columns: Sequence[Col]) -> None:
        self._cols = list(columns)
        self._rebuild()

    def add_fitted_row(self, *cells: object, key: str | None = None) -> None:
        self._rows.append((cells, key))
        self._rebuild()

    def set_rows(self, rows: Sequence[tuple[tuple, str | None]]) -> None:
        """Replace every row at once (one rebuild instead of one per row)."""
        self._rows = list(rows)
        self._rebuild()

    def clear_rows(self) -> None:
        self._rows = []
        self._rebuild()

    def on_resize(self) -> None:
        self._rebuild()

    def _widths(self) -> list[int | None]:
        """Each column's width; None for a column dropped for lack of room."""
        dropped: set[int] = set()
        while True:
            widths = self._fit(dropped)
            first = next((i for i, c in enumerate(self._cols) if c.flex and not c.yields), None)
            natural = self._natural(first) if first is not None else 0
            left = [i for i, c in enumerate(self._cols)
                    if c.yields and widths[i] is not None]  # fmt: skip
            if first is None or not left or (widths[first] or 0) >= natural:
                return widths
            dropped.add(left[-1])

    def _natural(self, i: int) -> int:
        cells = [len(str(cells[i])) for cells, _ in self._rows if i < len(cells)]
        return max([len(self._cols[i].label), *cells])

    def _fit(self, dropped: set[int]) -> list[int | None]:
        """Each column's width without `dropped`; None for a column left out."""
        natural = [
            max([len(c.label)] + [len(str(cells[i])) for cells, _ in self._rows if i < len(cells)])
            for i, c in enumerate(self._cols)
        ]
        shown = [i for i in range(len(self._cols)) if i not in dropped]
        width = self._cell_room()

        def room() -> int:
            return width - 2 * self.cell_padding * len(shown)

        def least() -> int:
            return sum(
                min(natural[i], self._cols[i].min_width) if self._cols[i].flex else natural[i]
                for i in shown
            )

        for i in reversed(range(len(self._cols))):
            if least() <= room():
                break
            if self._cols[i].optional and i in shown:
                shown.remove(i)
        flex = [i for i in shown if self._cols[i].flex]
        widths: list[int | None] = [natural[i] if i in shown else None for i in range(len(natural))]
        left = room() - sum(natural[i] for i in shown if i not in flex)
        want = sum(natural[i] for i in flex)
        if flex and want > left:
            # Every text column gets its minimum, then the rest of the room in proportion
            # to how much more each would take; none past its natural width.
            for i in flex:
                widths[i] = min(natural[i], self._cols[i].min_width)
            spare = max(0, left - sum(widths[i] for i in flex))  # type: ignore[misc]
            for i in (i for i in flex if self._cols[i].first):
                take = min(spare, natural[i] - widths[i])  # type: ignore[operator]
                widths[i] += take  # type: ignore[operator]
                spare -= take
            extra = {i: natural[i] - widths[i] for i in flex}  # type: ignore[operator]
            total = sum(extra.values()) or 1
            for i in flex:
                widths[i] += spare * extra[i] // total  # type: ignore[operator]
        return widths

    def _cell_room(self) -> int:
        """The width the cells may use: the table's, less the vertical scrollbar its rows
        will need (the one shown now appears only after the rows are added, and columns
        fitted without it overflowed into a horizontal scrollbar)."""
        rows = len(self._rows) + (1 if self.show_header else 0)
        overflows = rows > self.content_region.height and self.styles.overflow_y != "hidden"
        return self.content_region.width - (self.styles.scrollbar_size_vertical if overflows else 0)

    def _rebuild(self) -> None:
        """Draw the rows again at the widths that fit now, the cursor where it was.

        A rebuild is a redraw, not a move: the highlight events DataTable sends while it
        refills (the first row added is highlighted, then the cursor moves back) are held
        back, and one `RowHighlighted` says where the cursor ends. A screen that loads the
        highlighted row into a form would otherwise, on every refill or resize, load
        another row's value and then its own again over what was being typed (the
        Flags view's value box lost the keys typed before each refill).
        """
        if not self.is_mounted:
            return
        row = self.cursor_row
        widths = self._widths()
        with self.prevent(DataTable.RowHighlighted, DataTable.CellHighlighted):
            self.clear(columns=True)
            for col, width in zip(self._cols, widths, strict=True):
                if width is not None:
                    self.add_column(col.label, width=width)
            for cells, key in self._rows:
                fitted = [
                    ellipsize(str(cell), width) if col.flex and isinstance(cell, str) else cell
                    for cell, col, width in zip(cells, self._cols, widths, strict=False)
                    if width is not None
                ]
                self.add_row(*fitted, key=key)
            if self.row_count:
                self.move_cursor(row=min(row, self.row_count - 1), animate=False)
        if self.row_count and self.cursor_type == "row" and self.show_cursor:
            index = self.cursor_row
            key = self.coordinate_to_cell_key((index, 0)).row_key
            self.post_message(DataTable.RowHighlighted(self, index, key))

    def on_mount(self) -> None:
        self._rebuild()
