"""The Flags view's checks of a typed value: as you type, and on staging.

A value is checked by `service.plan(...)`, the validation `specconsole set` runs. The
check as you type waits for a pause and gives way to the next key; a stage (Enter, the
Stage button) runs in a group of its own, so keys handled after it cannot cancel it.
A mixin of `FlagsScreen` (its `@on` handlers stay there: Textual finds those only on
the screen's own classes).
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual import work
from textual.widgets import DataTable, Input, Static

from console.errors import ConsoleError, one_line

CHECK_DELAY_S = 0.25  # wait for typing to pause before asking the service


class FlagChecks:
    """Mixed into `FlagsScreen`: `self` is the screen (its selection, staged edits)."""

    selected: str | None
    staged: dict[str, str | None]
    session: Any
    workers: Any
    query_one: Any
    notify: Any
    app: Any
    _change_for: Any
    _fill_table: Any

    def stage_typed(self, value: str) -> None:
        """Check the typed value of the selected flag and stage it when it is valid."""
        if self.selected is None:
            self.notify("Select a flag first, then type its value.")
            return
        self._check(self._change_for(self.selected, value), stage=self.selected, delay=False)

    def _check(self, changes: dict[str, str | None], stage: str | None, delay: bool = True) -> None:
        """Check `changes` as `set` would (after a pause in typing, with `delay`); stage
        `stage`'s value when they are valid. A check as you type gives way to the next
        key; a stage (Enter, the Stage button) runs in a group of its own, so keys
        handled after it cannot cancel it."""
        if stage is None:
            self._check_typed(changes, delay)
        else:
            self._check_and_stage(changes, stage)

    @work(group="flag-check", exclusive=True, exit_on_error=False, description="check flag")
    async def _check_typed(self, changes: dict[str, str | None], delay: bool) -> None:
        if delay:
            await asyncio.sleep(CHECK_DELAY_S)
        await self._verify(changes, None)

    @work(group="flag-stage", exclusive=True, exit_on_error=False, description="stage flag")
    async def _check_and_stage(self, changes: dict[str, str | None], stage: str) -> None:
        self.workers.cancel_group(self, "flag-check")  # its answer would be older
        await self._verify(changes, stage)

    async def _verify(self, changes: dict[str, str | None], stage: str | None) -> None:
        check = self.query_one("#flag-check", Static)
        box = self.query_one("#flag-value", Input)
        try:
            plan = await self.session.service.plan(changes)
        except ConsoleError as exc:
            box.add_class("bad-value")
            check.update(Text(f"✗ {exc}", style=self.app.theme_variables.get("error", "red")))
            return
        except Exception as exc:
            check.update(Text(f"✗ {one_line(exc)}"))
            return
        box.remove_class("bad-value")
        check.update(Text("✓ valid" + ("" if plan.changed else " (no change)"),
                          style=self.app.theme_variables.get("success", "green")))  # fmt: skip
        if stage is not None:
            self.staged[stage] = changes[stage]
            self._fill_table()
            self.query_one("#flag-table", DataTable).focus()
