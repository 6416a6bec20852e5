"""The sweeps view's form, folded into one line once there are points to read.

Below the tall design (40 rows) the view has no charts, and too few rows for the form,
the points and the verdict at once: at 80x24 a sweep of eight points showed five, the
rest scrolled. So once a sweep's points are on screen (a run ended, or the stored sweep
loaded), the form folds into one line that says what it holds. The line is a button:
Enter or a click unfolds the form, as does the focus reaching any of its fields by any
way (Tab, the verdict filling in the sweep it asks for); the form folds again when the
focus leaves it (Escape, a run starting). At 40 rows and more it never folds.

A mixin of `SweepsScreen`: it reads the form's widgets the screen composes.
"""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Button, Input, Select

# What the folded line names, in the form's order: (word, the field).
FOLD_FIELDS = (("", "#sweep-contexts"), ("out", "#sweep-outputs"), ("", "#sweep-types"),
               ("repeat", "#sweep-repeat"), ("±", "#sweep-target"), ("max", "#sweep-max"),
               ("prompts", "#sweep-prompts"))  # fmt: skip


class FoldedForm:
    """The folding half of the sweeps view (see the module docstring)."""

    _points_shown = False  # whether a sweep's points are in the table

    def folded_text(self) -> str:
        """The form in one line: the method, each field's value (a blank field its
        default, as the placeholder says; a blank optional one left out)."""
        kind = str(self.query_one("#sweep-kind", Select).value)
        parts = [kind]
        for word, selector in FOLD_FIELDS:
            box = self.query_one(selector, Input)
            value = box.value.strip() or box.placeholder
            if value and value != "optional":
                parts.append(f"{word} {value}".strip())
        return " · ".join(parts)

    def show_folded(self) -> None:
        """Fold or unfold as the rule says, and keep the folded line's text current."""
        fold = self._points_shown and not self.has_class("-tall") and not self._in_form()
        self.set_class(fold, "-folded")
        line = self.query_one("#sweep-folded", Button)
        line.can_focus = fold  # a hidden line would take the focus (and the first Tab)
        if fold:
            line.label = f"Edit sweep ▸ {self.folded_text()}"

    def _in_form(self) -> bool:
        focused: Widget | None = self.focused
        form = self.query_one("#sweep-form")
        return focused is not None and (focused is form or form in focused.ancestors)

    def unfold(self) -> None:
        self.set_class(False, "-folded")
        self.set_focus(self.query_one("#sweep-kind"))
