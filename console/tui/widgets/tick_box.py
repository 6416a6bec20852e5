"""A checkbox whose ticked and unticked states differ in shape, not only in colour.

Textual's checkbox draws the same `X` both ways and tells them apart by colour, which a
terminal with few colours, a high-contrast theme or a screenshot loses: the baseline
box looked ticked when it was not. Here ticked is `✓` and unticked is blank.
"""

from __future__ import annotations

from textual.widgets import Checkbox

TICKED = "✓"
UNTICKED = " "


class TickBox(Checkbox):
    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  (Textual's name)
        return TICKED if self.value else UNTICKED
