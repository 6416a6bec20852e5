"""Pooled figures with their uncertainty: the arithmetic every comparison uses.

Pooled, not medians: over a set of requests, commit = all decode tokens / all verify
steps, step time = all decode time / all verify steps and tok/s = all decode tokens / all
decode time, so tok/s = commit / step holds exactly on every row that shows all three
(separate medians come from different requests and need not agree).

Uncertainty: a percentile bootstrap over requests. Each resample draws the requests of
every group with replacement (groups independently: before and after, or two runs, are
separate sets of requests) and recomputes the figure; the interval is the middle
`level` of those values, widened where needed so it always holds its own point estimate.
Seeded, so a stored run reproduces its own intervals.

A change is reported as a finding only when its interval excludes "no change"; otherwise
it is "within noise (+3% ± 7%)".
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from console.measure.records import RequestSample

RESAMPLES = 1000
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A figure and its bootstrap interval."""

    value: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def rel_half_width(self) -> float:
        """Half the interval's width over the value: 0.05 reads "± 5%"."""
        return self.half_width / abs(self.value) if self.value else float("inf")

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    def scaled(self, factor: float) -> Interval:
        return Interval(self.value * factor, self.low * factor, self.high * factor)

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interval:
        return cls(float(data["value"]), float(data["low"]), float(data["high"]))

    def text(self, fmt: str = "{:.2f}", scale: float = 1.0) -> str:
        v, lo, hi = (fmt.format(x * scale) for x in (self.value, self.low, self.high))
        return v if lo == hi else f"{v} [{lo}–{hi}]"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 1]."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    lo = int(position)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)


@dataclass(frozen=True)
class Pooled:
    """Sums over a set of requests; every figure is a ratio of them."""

    tokens: float  # decode tokens: completion tokens - 1 per request (the prefill's is not)
    steps: float  # verify steps
    seconds: float  # decode time
    n: int

    @property
    def commit(self) -> float:
        return self.tokens / self.steps

    @property
    def step_s(self) -> float:
        return self.seconds / self.steps

    @property
    def tok_s(self) -> float:
        return self.tokens / self.seconds


def usable(samples: Sequence[RequestSample]) -> list[RequestSample]:
    """The samples a pooled figure may use: unflagged, with decode time and verify steps."""
    return [
        s
        for s in samples
        if s.ok and s.decode_time_s and s.verify_steps and s.completion_tokens > 1
    ]


def pool(samples: Sequence[RequestSample]) -> Pooled:
    return Pooled(
        tokens=float(sum(s.completion_tokens - 1 for s in samples)),
        steps=float(sum(s.verify_steps or 0 for s in samples)),
        seconds=sum(s.decode_time_s or 0.0 for s in samples),
        n=len(samples),
    )


def bootstrap(
    groups: Sequence[Sequence[Any]],
    statistic: Callable[..., float],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Interval:
    """`statistic(*groups)` and its percentile bootstrap interval, each group resampled
    with replacement on its own. A group of one request has no spread to resample: the
    interval then collapses to the point (callers say how many requests it rests on)."""
    value = statistic(*groups)
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        drawn = [rng.choices(list(g), k=len(g)) for g in groups]
        try:
            draws.append(statistic(*drawn))
        except ZeroDivisionError:
            continue  # a draw of requests with no steps: skip it, not the interval
    if not draws:
        return Interval(value, value, value)
    tail = (1.0 - level) / 2
    low, high = percentile(draws, tail), percentile(draws, 1.0 - tail)
    return Interval(value, min(low, value), max(high, value))


@dataclass(frozen=True)
class PooledFigures:
    """A point's pooled tok/s, commit and step time, each with its interval."""

    tok_s: Interval
    commit: Interval
    step_s: Interval
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "decode_tok_s": self.tok_s.as_dict(),
            "commit_len": self.commit.as_dict(),
            "step_time_s": self.step_s.as_dict(),
            "n": self.n,
            "pooled": True,
        }


def pooled_figures(
    samples: Sequence[RequestSample], *, seed: int = 0, resamples: int = RESAMPLES
) -> PooledFigures | None:
    """The pooled figures of the usable samples, or None when there is none."""
    ok = usable(samples)
    if not ok:
        return None

    def figure(pick: Callable[[Pooled], float]) -> Interval:
        return bootstrap([ok], lambda g: pick(pool(g)), seed=seed, resamples=resamples)

    return PooledFigures(
        tok_s=figure(lambda p: p.tok_s),
        commit=figure(lambda p: p.commit),
        step_s=figure(lambda p: p.step_s),
        n=len(ok),
    )


@dataclass(frozen=True)
class ChangeInterval:
    """after / before of one pooled figure, with the interval of that ratio."""

    ratio: Interval

    @property
    def percent(self) -> float:
        return (self.ratio.value - 1.0) * 100.0

    @property
    def within_noise(self) -> bool:
        return self.ratio.contains(1.0)

    def text(self) -> str:
        """'+19% [+12%…+26%]' for a finding, 'within noise (+3% ± 7%)' otherwise."""
        pct = self.percent
        if self.within_noise:
            half = self.ratio.half_width * 100.0
            return f"within noise ({pct:+.0f}% ± {half:.0f}%)"
        lo, hi = (self.ratio.low - 1.0) * 100.0, (self.ratio.high - 1.0) * 100.0
        return f"{pct:+.0f}% [{lo:+.0f}%…{hi:+.0f}%]"

    def as_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio.as_dict(),
            "percent": self.percent,
            "within_noise": self.within_noise,
            "text": self.text(),
        }


def change(
    before: Sequence[RequestSample],
    after: Sequence[RequestSample],
    pick: Callable[[Pooled], float],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> ChangeInterval:
    """The ratio after / before of a pooled figure (`pick`, e.g. `lambda p: p.tok_s`)."""
    a, b = usable(before), usable(after)
    return ChangeInterval(
        bootstrap([a, b], lambda x, y: pick(pool(y)) / pick(pool(x)), seed=seed,
                  resamples=resamples)
    )  # fmt: skip
