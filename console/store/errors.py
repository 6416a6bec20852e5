"""The one error the run history raises for things a user can cause or fix."""

from __future__ import annotations

from console.errors import ConsoleError


class HistoryError(ConsoleError):
    """An unknown run, an unreadable history file, a bad export request."""
