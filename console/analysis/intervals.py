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

from console.analysis.records import RequestSample
from console.analysis.thresholds import LEVEL

RESAMPLES = 1000


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


def passage(sample: RequestSample) -> str:
    """Which passage a request read: its prompt id (text type, context and window)."""
    return sample.prompt_id


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
    (interval,) = bootstrap_many(groups, [statistic], resamples=resamples, level=level, seed=seed)
    return interval


def strata(samples: Sequence[Any], key: Callable[[Any], Any]) -> list[list[Any]] | None:
    """`samples` split by `key` (the passage a request read) when every passage was read
    at least twice, else None.

    Greedy decoding of one passage commits the same tokens in the same steps every time,
    so repeats of a passage differ only in timing. Resampling within each passage then
    gives the interval of the figure over these passages (timing noise), not over the
    text type at large (which adds the passage-to-passage spread in commit that no
    number of repeats narrows, and which a before/after on the same passages cancels)."""
    groups: dict[Any, list[Any]] = {}
    for s in samples:
        groups.setdefault(key(s), []).append(s)
    if all(len(g) >= 2 for g in groups.values()):
        return list(groups.values())
    return None


def _draw(rng: random.Random, group: Sequence[Any], layers: list[list[Any]] | None) -> list:
    if layers is None:
        return rng.choices(list(group), k=len(group))
    return [x for layer in layers for x in rng.choices(layer, k=len(layer))]


def bootstrap_many(
    groups: Sequence[Sequence[Any]],
    statistics: Sequence[Callable[..., float]],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
    key: Callable[[Any], Any] | None = None,
) -> list[Interval]:
    """Several statistics of the same groups from the same draws: one resampling serves
    tok/s, commit and step time (a third of the work, and the three intervals come from
    the same resampled requests). With `key`, a group whose every passage was read at
    least twice is resampled within passages (`strata`)."""
    layered = [(g, strata(g, key) if key is not None else None) for g in groups]
    drawn_sets = []
    rng = random.Random(seed)
    for _ in range(resamples):
        drawn_sets.append([_draw(rng, g, layers) for g, layers in layered])
    return [
        _interval(statistic(*groups), (lambda d, f=statistic: f(*d)), drawn_sets, level)
        for statistic in statistics
    ]


def _interval(
    value: float, statistic: Callable[[Any], float], draws: Sequence[Any], level: float
) -> Interval:
    values = []
    for drawn in draws:
        try:
            values.append(statistic(drawn))
        except ZeroDivisionError:
            continue  # a draw of requests with no steps: skip it, not the interval
    if not values:
        return Interval(value, value, value)
    tail = (1.0 - level) / 2
    low, high = percentile(values, tail), percentile(values, 1.0 - tail)
    # A percentile interval of a ratio need not hold its point estimate when n is tiny;
    # widen it to hold it, so a printed value never sits outside its own interval.
    return Interval(value, min(low, value), max(high, value))


# The pooled figures by the names every record and JSON shape uses for them.
POOLED: dict[str, Callable[[Pooled], float]] = {
    "decode_tok_s": lambda p: p.tok_s,
    "commit_len": lambda p: p.commit,
    "step_time_s": lambda p: p.step_s,
}


def pooled_statistic(name: str) -> Callable[[Sequence[RequestSample]], float]:
    """The pooled figure `name` of a set of (usable) requests."""
    pick = POOLED[name]
    return lambda samples: pick(pool(samples))


@dataclass(frozen=True)
class PooledFigures:
    """A point's pooled tok/s, commit and step time, each with its interval."""

    tok_s: Interval
    commit: Interval
    step_s: Interval
    n: int

    def figure(self, name: str) -> Interval:
        """The interval of a figure by its record name ("decode_tok_s", ...)."""
        return {"decode_tok_s": self.tok_s, "commit_len": self.commit, "step_time_s": self.step_s}[
            name
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "decode_tok_s": self.tok_s.as_dict(),
            "commit_len": self.commit.as_dict(),
            "step_time_s": self.step_s.as_dict(),
            "n": self.n,
            "pooled": True,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PooledFigures:
        return cls(
            tok_s=Interval.from_dict(data["decode_tok_s"]),
            commit=Interval.from_dict(data["commit_len"]),
            step_s=Interval.from_dict(data["step_time_s"]),
            n=int(data["n"]),
        )


def pooled_figures(
    samples: Sequence[RequestSample], *, seed: int = 0, resamples: int = RESAMPLES
) -> PooledFigures | None:
    """The pooled figures of the usable samples, or None when there is none."""
    ok = usable(samples)
    if not ok:
        return None
    tok_s, commit, step_s = bootstrap_many(
        [ok], [pooled_statistic(name) for name in POOLED], seed=seed, resamples=resamples,
        key=passage,
    )  # fmt: skip
    return PooledFigures(tok_s=tok_s, commit=commit, step_s=step_s, n=len(ok))


@dataclass(frozen=True)
class ChangeInterval:
    """after / before of one figure, with the interval of that ratio.

    `n_before` / `n_after` are the requests each side rests on (None: not known). One
    request on a side has no spread to resample, so its interval is only the point: such
    a change is never a finding, whatever its size."""

    ratio: Interval
    n_before: int | None = None
    n_after: int | None = None

    @property
    def percent(self) -> float:
        return (self.ratio.value - 1.0) * 100.0

    @property
    def within_noise(self) -> bool:
        return self.ratio.contains(1.0)

    @property
    def has_interval(self) -> bool:
        return all(n is None or n >= 2 for n in (self.n_before, self.n_after))

    @property
    def finding(self) -> bool:
        """A change that is real at the interval's level: it has an interval and the
        interval excludes "no change"."""
        return self.has_interval and not self.within_noise

    def text(self) -> str:
        """'+19% [+12%…+26%]' for a finding, 'within noise (+3% ± 7%)' otherwise."""
        pct = self.percent
        if not self.has_interval:
            return f"{pct:+.0f}% (one request: no interval)"
        if self.ratio.low == self.ratio.high == 1.0:
            return "no change (exactly equal)"  # e.g. commit on the same passages, greedy
        if self.within_noise:
            # the wider side of an interval that is even on the log scale: the change ±
            # it always spans "no change" (the half-width alone read -35% ± 31% as
            # within noise)
            r = self.ratio
            half = max(r.value - r.low, r.high - r.value) * 100.0
            return f"within noise ({pct:+.0f}% ± {half:.0f}%)"
        lo, hi = (self.ratio.low - 1.0) * 100.0, (self.ratio.high - 1.0) * 100.0
        return f"{pct:+.0f}% [{_bound(lo)}…{_bound(hi)}]"

    def as_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio.as_dict(),
            "percent": self.percent,
            "within_noise": self.within_noise,
            "finding": self.finding,
            "text": self.text(),
            "n_before": self.n_before,
            "n_after": self.n_after,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChangeInterval:
        return cls(Interval.from_dict(data["ratio"]), data.get("n_before"), data.get("n_after"))


def _bound(percent: float) -> str:
    # A bound that rounds to 0% would read "-0%": show the tenth that keeps it off zero.
    return f"{percent:+.0f}%" if abs(percent) >= 0.5 else f"{percent:+.1f}%"


def changes_between(
    before: Sequence[Any],
    after: Sequence[Any],
    statistics: Sequence[Callable[[Sequence[Any]], float]],
    *,
    key: Callable[[Any], Any] = passage,
    seed: int = 0,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> list[ChangeInterval]:
    """after / before of each statistic, with a bootstrap interval of the ratio.

    Both sides read the same passages (`key`), each at least twice: each side is
    resampled within its passages (`strata`), so the interval is that of the change on
    these passages, timing noise only. Else paired where the sides share at least two
    passages: the draws pick passages, each with all its requests on both sides, so the
    spread between passages (commit on one passage of prose is not commit on another)
    cancels in the ratio. Else the sides are resampled independently."""
    n_b, n_a = len(before), len(after)
    ratios = [(lambda x, y, f=f: f(y) / f(x)) for f in statistics]
    clusters: dict[Any, tuple[list[Any], list[Any]]] = {}
    for side, samples in enumerate((before, after)):
        for s in samples:
            clusters.setdefault(key(s), ([], []))[side].append(s)
    shared = [k for k, (b, a) in clusters.items() if b and a]
    if len(shared) == len(clusters) and strata(before, key) and strata(after, key):
        intervals = bootstrap_many(
            [before, after], ratios, seed=seed, resamples=resamples, level=level, key=key
        )
        return [ChangeInterval(iv, n_b, n_a) for iv in intervals]
    if len(shared) < 2:
        intervals = bootstrap_many(
            [before, after], ratios, seed=seed, resamples=resamples, level=level
        )
        return [ChangeInterval(iv, n_b, n_a) for iv in intervals]
    keys = sorted(clusters, key=str)
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        chosen = rng.choices(keys, k=len(keys))
        draws.append(
            (
                [s for k in chosen for s in clusters[k][0]],
                [s for k in chosen for s in clusters[k][1]],
            )
        )
    return [
        ChangeInterval(
            _interval(ratio(before, after), lambda d, r=ratio: r(*d), draws, level), n_b, n_a
        )
        for ratio in ratios
    ]


def pooled_changes(
    before: Sequence[RequestSample],
    after: Sequence[RequestSample],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> dict[str, ChangeInterval] | None:
    """The change of each pooled figure (`POOLED`) from `before` to `after`, from the same
    draws; None when a side has no usable request."""
    a, b = usable(before), usable(after)
    if not a or not b:
        return None
    stats = [pooled_statistic(name) for name in POOLED]
    return dict(
        zip(POOLED, changes_between(a, b, stats, seed=seed, resamples=resamples), strict=True)
    )


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
    (result,) = changes_between(a, b, [lambda g: pick(pool(g))], seed=seed, resamples=resamples)
    return result
