"""One request's (or one window's) speculative-decoding figures, whichever engine said them.

Each engine package reads its own fields into a `SpecDetails` (`sglang/spec_fields.py`,
`vllm/spec_fields.py`) and says in `source` which spelling it found. Nothing guesses: a
field that is absent stays None, and the caller falls back to a coarser source.

All histograms are indexed by accepted draft tokens in one verify step (index j = steps
that accepted exactly j drafts), so commit length with the bonus token is 1 + j.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SpecDetails:
    """One request's (or one window's) speculative-decoding figures and their source."""

    source: str
    verify_steps: int | None = None
    accepted_drafts: int | None = None  # draft tokens the target accepted (no bonus)
    proposed_drafts: int | None = None  # draft tokens offered for verification
    histogram: list[int] | None = None  # [j] = verify steps that accepted exactly j drafts
    per_step_accepted: list[int] | None = None  # vLLM `detailed`: one entry per step, in order
    per_position: list[float] | None = None  # [k] = share of steps accepting draft k
    engine_accept_length: float | None = None  # the engine's own figure, as it defines it

    @property
    def commit_len(self) -> float | None:
        """Committed tokens per verify step including the bonus: 1 + accepted / steps."""
        if self.verify_steps and self.accepted_drafts is not None:
            return 1.0 + self.accepted_drafts / self.verify_steps
        return None

    @property
    def accept_rate(self) -> float | None:
        if self.proposed_drafts and self.accepted_drafts is not None:
            return self.accepted_drafts / self.proposed_drafts
        return None

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["commit_len"] = self.commit_len
        data["accept_rate"] = self.accept_rate
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpecDetails:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def as_histogram(value: Any) -> list[int] | None:
    if not isinstance(value, list) or not value:
        return None
    counts = [as_int(v) for v in value]
    return None if any(c is None or c < 0 for c in counts) else [int(c) for c in counts]  # type: ignore[arg-type]


def first_present(data: dict[str, Any], *names: str) -> tuple[Any, str | None]:
    for name in names:
        if data.get(name) is not None:
            return data[name], name
    return None, None


def position_rates(histogram: list[int]) -> list[float] | None:
    """Acceptance at each draft position from a per-step histogram: a chain accepts draft
    k exactly when the step accepted more than k drafts. (Tree drafts have no positions in
    this sense; the share is then that of steps reaching depth k + 1.)"""
    steps = sum(histogram)
    if steps <= 0 or len(histogram) < 2:
        return None
    return [sum(histogram[k + 1 :]) / steps for k in range(len(histogram) - 1)]
