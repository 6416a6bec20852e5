"""The typed pieces that every before/after comparison is made of.

A run compared with a run (`store.compare`) and a baseline before and after a flag change
(`measure.baseline`) both line up a figure measured twice and say how it moved. These
are the records they share; each has `as_dict()` for `--json`. A figure's `.a` / `.b`
are the pooled values of each side (`measure.intervals`), each with its bootstrap
interval, and the change b / a carries the interval of that ratio: a change whose
interval holds "no change" reads "within noise (+3% ± 7%)" and is never a finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from console.analysis.intervals import (
    POOLED,
    ChangeInterval,
    Interval,
    pooled_changes,
    pooled_figures,
)
from console.analysis.records import RequestSample


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
    """One figure (`name`, e.g. "decode_tok_s") measured on two sides, and its change:
    the value of each side, its interval, and the interval of the ratio b / a."""

    name: str
    a: float | None
    b: float | None
    a_interval: Interval | None = None
    b_interval: Interval | None = None
    moved: ChangeInterval | None = None  # b / a with its interval

    @property
    def change(self) -> Change | None:
        return Change.between(self.a, self.b)

    @property
    def finding(self) -> bool:
        """Whether the change is real at the interval's level (not within noise)."""
        return self.moved is not None and self.moved.finding

    def change_text(self) -> str:
        """'+19% [+12%…+26%]', 'within noise (+3% ± 7%)', or '-' with nothing to compare."""
        if self.moved is not None:
            return self.moved.text()
        change = self.change
        return "-" if change is None else f"{change.percent:+.0f}% (no interval)"

    def change_dict(self) -> dict[str, Any] | None:
        """The change for JSON: ratio and percent, and where there is one, the ratio's
        interval (`low`, `high`), `within_noise`, `finding` and the text."""
        change = self.change
        if change is None:
            return None
        out: dict[str, Any] = change.as_dict()
        if self.moved is not None:
            out.update(
                low=self.moved.ratio.low, high=self.moved.ratio.high,
                within_noise=self.moved.within_noise, finding=self.moved.finding,
                text=self.moved.text(),
            )  # fmt: skip
        return out

    def as_dict(self) -> dict[str, Any]:
        def iv(interval: Interval | None) -> dict[str, float] | None:
            return interval.as_dict() if interval else None

        return {
            "a": self.a,
            "b": self.b,
            "a_interval": iv(self.a_interval),
            "b_interval": iv(self.b_interval),
            "change": self.change_dict(),
        }


def pooled_pairs(
    before: Sequence[RequestSample], after: Sequence[RequestSample], *, seed: int = 0
) -> dict[str, FigurePair]:
    """tok/s, commit and step time of two sets of requests (one point each), pooled, with
    each side's interval and the interval of each ratio; keyed by record name. The three
    values on each side come from the same sums, so tok/s = commit / step on both sides
    and tok/s ratio = commit ratio / step ratio."""
    a, b = pooled_figures(before, seed=seed), pooled_figures(after, seed=seed)
    moved = pooled_changes(before, after, seed=seed) or {}
    return {
        name: FigurePair(
            name,
            a.figure(name).value if a else None,
            b.figure(name).value if b else None,
            a.figure(name) if a else None,
            b.figure(name) if b else None,
            moved.get(name),
        )
        for name in POOLED
    }
