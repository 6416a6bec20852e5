"""The typed pieces that every before/after comparison is made of.

A run compared with a run (`store.compare`) and a baseline before and after a flag change
(`measure.baseline`) both line up a figure measured twice and say how it moved. These
are the records they share; each has `as_dict()` for `--json`. A figure is one value per
side today (the median of the point's unflagged samples); the pooled value and an
interval per side belong next to it as further fields, so callers that read `.a` / `.b`
and `as_dict()` keys keep working when they arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Change:
    """How a figure moved: `ratio` = new / old."""

    ratio: float

    @property
    def percent(self) -> float:
        return (self.ratio - 1.0) * 100.0

    @property
    def fraction(self) -> float:
        """The change as a fraction: 0.2 for +20%."""
        return self.ratio - 1.0

    @classmethod
    def between(cls, old: float | None, new: float | None) -> Change | None:
        """None when either side is missing or the old one is zero (no ratio exists)."""
        if old is None or new is None or old == 0:
            return None
        return cls(new / old)

    def as_dict(self) -> dict[str, float]:
        return {"ratio": self.ratio, "percent": self.percent}


@dataclass(frozen=True)
class FigurePair:
    """One figure (`name`, e.g. "decode_tok_s") measured on two sides, and its change."""

    name: str
    a: float | None
    b: float | None

    @property
    def change(self) -> Change | None:
        return Change.between(self.a, self.b)

    def as_dict(self) -> dict[str, Any]:
        change = self.change
        return {"a": self.a, "b": self.b, "change": change.as_dict() if change else None}
