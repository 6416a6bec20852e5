"""The session's lifecycle log: every event and every engine action, whatever view it
started from, kept by the app so the Service view shows them all, also those from
before it was first opened (an apply from the Flags view, a rollback from a key)."""

from __future__ import annotations

import time
from collections.abc import Callable

KEEP = 500  # lines: a day of restarts


def clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


class EventLog:
    def __init__(self, changed: Callable[[], None]) -> None:
        self.lines: list[str] = []  # the newest KEEP
        self.total = 0  # lines ever added: a view that has shown n of them shows the rest
        self._changed = changed

    def add(self, text: str, at: float | None = None) -> None:
        self.lines = [*self.lines, f"{clock(time.time() if at is None else at)}  {text}"][-KEEP:]
        self.total += 1
        self._changed()

    def since(self, shown: int) -> tuple[bool, list[str]]:
        """(whether to start over, the lines to write) for a view that has shown `shown`."""
        new = self.total - shown
        return (new > len(self.lines), self.lines[-new:] if 0 < new <= len(self.lines)
                else (self.lines if new > 0 else []))  # fmt: skip
