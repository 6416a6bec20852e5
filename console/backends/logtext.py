"""Helpers for reading engines' log lines: tqdm frames, `key: value` pairs, numbers."""

from __future__ import annotations

import math
import re

# `key: value` pairs of the decode line; keys may contain spaces, `#`, `(token/s)`.
PAIR_RE = re.compile(r"(#?[A-Za-z][\w .-]*?(?: \([^)]*\))?): ([^,]+)")


def last_segment(line: str) -> str:
    # tqdm redraws with carriage returns; a log file line may hold several frames.
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1] if parts else ""


def num(pairs: dict[str, str], key: str, cast: type = float) -> float | int | None:
    raw = pairs.get(key)
    if raw is None:
        return None
    try:
        return cast(raw.strip())
    except ValueError:
        return None


def float_or_none(text: str | None) -> float | None:
    if text is None:
        return None
    value = float(text)
    return None if math.isnan(value) else value
