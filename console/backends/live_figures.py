"""Small rules every engine's live samples share (see `console/measure/live_samples.py`)."""

from __future__ import annotations

WALL_CLOCK_NOTE = "tok/s over wall time (this engine exposes no decode busy time)"


def as_count(value: float | None) -> int | None:
    return None if value is None else round(value)


def positive_count(value: float | None) -> int | None:
    # A context of 0 is "nothing running at the moment of the scrape", not a context.
    return None if value is None or value <= 0 else round(value)


def ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return num / den
