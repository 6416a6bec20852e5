"""The one comparison protocol: two sides on the same passages, paired by passage.

Every before/after in the console (a flag change with `set --baseline`, two stored runs in
`history compare` and `explain`, the TUI's apply) lines up one point (text type, context)
measured on two sides and goes through `paired_figures`:

- Balanced by passage. Each side's figure is pooled over its passages with equal weight
  per passage (per passage the mean decode tokens, verify steps and decode time of its
  requests, summed over the passages both sides read), so 3 x passage A + 2 x passage B
  against 5 x A + 5 x B compares the same mix, and tok/s = commit / step on every side.
  A passage only one side read is left out and counted.
- Exact where it is exact. Greedy decoding of one passage commits the same tokens in the
  same steps every time; when every request of every passage on both sides shows that,
  the commit ratio is exact by construction (no noise to resample) and says "exact".
  Sampled (temperature > 0) it never is: the k-th read of a passage sends the same seed
  on both sides, so the pairs are by passage and seed, and commit gets a paired interval.
- Paired intervals. The k-th request of a passage on one side is paired with the k-th on
  the other; the interval of a ratio is a t interval of the mean log ratio over those
  pairs (timing noise only: the passage mix cancels in each pair), at 99% family-wise
  over the rows judged together (see `CHANGE_LEVEL`), and at a look of a comparison
  that reads on, that look's share of it (`sequential`); beside it the same change at the
  shown 95%, which "too wide" is read from (`answer`). Fewer than
  `MIN_PAIRS` pairs is too few to resample, and the change says so instead of printing a
  narrow interval.
- Drift included. Blocks measured minutes apart, on either side of a restart, differ by
  more than request-to-request noise: the host's measured block-to-block shift
  (`noise_profile.Drift`) is added to the timing interval of every time figure (step
  time, tok/s), in quadrature on the log scale, by the order the blocks were measured in.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from console.analysis.comparison import FigurePair
from console.analysis.intervals import POOLED, ChangeInterval, Interval, Pooled, passage, usable
from console.analysis.noise_profile import Drift
from console.analysis.records import RequestSample
from console.analysis.sequential import ONE_LOOK, look_level
from console.analysis.student_t import t_quantile, z_quantile
from console.analysis.thresholds import CHANGE_LEVEL

# Three pairs is the least a t interval is shown on (two gives a t of 64 on one degree of
# freedom at 99%: an interval that says nothing); below, the change says it is too few.
MIN_PAIRS = 3
# A change is judged at 99% family-wise: a baseline compares 2-4 points at once, and at
# 99% per row a null change would still raise a false alarm on one row in about every
# 25th try. The rows' timing noise is independent, so its t interval is taken at
# 1 - 1% / rows (Bonferroni: 99.75% for four rows); the drift is one shift that moves
# every row of a comparison together, one chance rather than one per row, so its term
# stays at 99%. Each side's own figure keeps its 95% interval.
SIDE_LEVEL = 0.95
Z99 = z_quantile(CHANGE_LEVEL)
# Figures that carry timing (and so drift); commit is a count of tokens per step.
TIMED = ("decode_tok_s", "step_time_s")


def family_level(rows: int, looks: tuple[float, ...] = ONE_LOOK) -> float:
    """The per-row level that keeps a comparison of `rows` rows at `CHANGE_LEVEL` as a
    whole (Bonferroni), at the last of its `looks` (information fractions: `sequential`
    spends the rows' share over the looks; one look at full information spends it all)."""
    return look_level(looks, (1.0 - CHANGE_LEVEL) / max(1, rows))


def drift_z(looks: tuple[float, ...] = ONE_LOOK) -> float:
    """The drift term's multiplier at the last of `looks`: one shift moves every row
    together, so it spends the comparison's whole level over its looks (`Z99` at one)."""
    return z_quantile(look_level(looks, 1.0 - CHANGE_LEVEL))


def _by_passage(samples: Sequence[RequestSample]) -> dict[str, list[RequestSample]]:
    groups: dict[str, list[RequestSample]] = {}
    for s in sorted(samples, key=lambda s: s.t):
        groups.setdefault(passage(s), []).append(s)
    return groups


def balanced_pool(groups: dict[str, list[RequestSample]], keys: Sequence[str]) -> Pooled:
    """Sums with every passage of `keys` weighted equally: per passage the mean tokens,
    steps and decode time of its requests, summed over the passages."""
    tokens = steps = seconds = 0.0
    n = 0
    for k in keys:
        g = groups[k]
        tokens += statistics.fmean(s.completion_tokens - 1 for s in g)
        steps += statistics.fmean(s.verify_steps or 0 for s in g)
        seconds += statistics.fmean(s.decode_time_s or 0.0 for s in g)
        n += len(g)
    return Pooled(tokens=tokens, steps=steps, seconds=seconds, n=n)


def _deterministic(groups: dict[str, list[RequestSample]], keys: Sequence[str]) -> bool:
    """Every passage read at least twice here, each time the same tokens in the same steps."""
    return all(
        len(groups[k]) >= 2 and len({(s.completion_tokens, s.verify_steps) for s in groups[k]}) == 1
        for k in keys
    )


@dataclass(frozen=True)
class PairedChange(ChangeInterval):
    """after / before of one figure under the protocol: the interval (drift included where
    `drift_rel` > 0), whether it is exact by construction, and how many pairs it rests on.

    `timing_rel` / `drift_rel` are the two half-widths on the log scale (0.05 ~ ± 5%), so a
    reader sees how much of the interval is the host's drift."""

    pairs: int = 0
    exact: bool = False
    timing_rel: float = 0.0
    drift_rel: float = 0.0
    order: str = ""
    se: float = 0.0  # the standard error of the log ratio from timing (before t and drift)
    # The same change at the shown 95% (timing and drift): what "too wide" is read from
    # (`answer`); the interval above is the decision's, at the level the comparison spends.
    shown: Interval | None = None

    @property
    def has_interval(self) -> bool:
        return self.exact or self.pairs >= MIN_PAIRS

    def text(self) -> str:
        pct = self.percent
        if self.exact:
            return "no change (exact)" if self.ratio.value == 1.0 else f"{pct:+.0f}% (exact)"
        if not self.has_interval:
            pairs = "1 pair" if self.pairs == 1 else f"{self.pairs} pairs"
            return f"{pct:+.0f}% ({pairs}: too few rounds to resample)"
        return super().text()

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "pairs": self.pairs, "exact": self.exact,
                "timing_rel": self.timing_rel, "drift_rel": self.drift_rel,
                "order": self.order}  # fmt: skip


def _log_ratios(
    ga: dict[str, list[RequestSample]],
    gb: dict[str, list[RequestSample]],
    keys: Sequence[str],
    pick: Callable[[Pooled], float],
) -> list[float]:
    """log(b / a) of one figure for each pair: the k-th request of a passage on each side."""
    out = []
    for k in keys:
        for sa, sb in zip(ga[k], gb[k], strict=False):
            va, vb = pick(_one(sa)), pick(_one(sb))
            if va > 0 and vb > 0:
                out.append(math.log(vb / va))
    return out


def _one(s: RequestSample) -> Pooled:
    return Pooled(float(s.completion_tokens - 1), float(s.verify_steps or 0),
                  s.decode_time_s or 0.0, 1)  # fmt: skip


def _paired_change(
    value: float,
    logs: list[float],
    drift_rel: float,
    *,
    order: str,
    n_a: int,
    n_b: int,
    level: float = CHANGE_LEVEL,
    shown_drift: float = 0.0,
) -> PairedChange:
    pairs = len(logs)
    timing = se = shown_timing = 0.0
    if pairs >= 2:
        se = statistics.stdev(logs) / math.sqrt(pairs)
        timing = t_quantile(level, pairs - 1) * se
        shown_timing = t_quantile(SIDE_LEVEL, pairs - 1) * se
    enough = pairs >= MIN_PAIRS
    centre = math.log(value)

    def around(half: float) -> Interval:
        return Interval(value, math.exp(centre - half), math.exp(centre + half))

    ratio = around(math.hypot(timing, drift_rel) if enough else 0.0)
    shown = around(math.hypot(shown_timing, shown_drift) if enough else 0.0)
    return PairedChange(ratio, n_a, n_b, pairs=pairs, timing_rel=timing, drift_rel=drift_rel,
                        order=order, se=se, shown=shown)  # fmt: skip


@dataclass(frozen=True)
class PairedFigures:
    """One point compared under the protocol: tok/s, commit and step time as
    `FigurePair`s (a = before, b = after) whose `moved` is a `PairedChange`; the
    passages both sides read and those only one did; the drift term used."""

    pairs: dict[str, FigurePair]
    passages: int
    unmatched: int
    rounds: int  # the fewest requests of one passage on either side
    drift: Drift

    def figure(self, name: str) -> FigurePair:
        return self.pairs[name]

    def as_dict(self) -> dict[str, Any]:
        return {"passages": self.passages, "unmatched_passages": self.unmatched,
                "rounds": self.rounds, "drift": self.drift.as_dict()}  # fmt: skip


def side_interval(groups: dict[str, list[RequestSample]], keys: Sequence[str], name: str,
                  value: float) -> Interval:  # fmt: skip
    """One side's figure with a t interval from the spread of its requests within their
    passages (timing noise). Where no passage was read twice there is no such spread, and
    the spread between passages stands in for it (wider: it holds the passage mix too);
    with a single request there is none, and the interval is the value alone."""
    pick = POOLED[name]
    resid = []
    logs_of = {k: [math.log(pick(_one(s))) for s in groups[k] if pick(_one(s)) > 0] for k in keys}
    repeated = [v for v in logs_of.values() if len(v) >= 2]
    if not repeated:  # one request per passage: the passages are the repeats
        repeated = [[x for v in logs_of.values() for x in v]]
    for logs in repeated:
        if len(logs) >= 2:
            mean = statistics.fmean(logs)
            resid += [x - mean for x in logs]
    n, df = len(resid), len(resid) - sum(1 for v in repeated if len(v) >= 2)
    if df < 1:
        return Interval(value, value, value)
    sd = math.sqrt(sum(r * r for r in resid) / df)
    half = t_quantile(SIDE_LEVEL, df) * sd / math.sqrt(n)
    return Interval(value, value * math.exp(-half), value * math.exp(half))


def paired_figures(
    before: Sequence[RequestSample],
    after: Sequence[RequestSample],
    *,
    drift: Drift | None = None,
    rows: int = 1,
    looks: tuple[float, ...] = ONE_LOOK,
) -> PairedFigures | None:
    """The protocol's comparison of one point, one of `rows` judged together (the timing
    part of each change interval at `family_level(rows, looks)`), at the last of `looks`
    of a comparison that reads on (`sequential`); None when the sides share no passage
    with a usable request (nothing to pair)."""
    drift = drift or Drift.none()
    ga, gb = _by_passage(usable(before)), _by_passage(usable(after))
    keys = sorted(set(ga) & set(gb))
    if not keys:
        return None
    pa, pb = balanced_pool(ga, keys), balanced_pool(gb, keys)
    # Sampled (temperature > 0), commit is a draw: the same seed on the same flags draws
    # the same tokens, but after a flag change it is a measured quantity, so it gets its
    # paired interval (by passage and seed) like step time, never "exact".
    greedy = all(s.temperature == 0 for g in (ga, gb) for k in keys for s in g[k])
    exact_commit = greedy and _deterministic(ga, keys) and _deterministic(gb, keys)
    n_a, n_b = pa.n, pb.n
    out = {}
    for name, pick in POOLED.items():
        va, vb = pick(pa), pick(pb)
        if name == "commit_len" and exact_commit:
            r = vb / va
            moved: PairedChange = PairedChange(Interval(r, r, r), n_a, n_b, exact=True,
                                               pairs=min(n_a, n_b), order=drift.order)  # fmt: skip
        else:
            logs = _log_ratios(ga, gb, keys, pick)
            timed = name in TIMED
            term = drift.term(drift_z(looks)) if timed else 0.0
            moved = _paired_change(vb / va, logs, term, order=drift.order, n_a=n_a, n_b=n_b,
                                   level=family_level(rows, looks),
                                   shown_drift=drift.term() if timed else 0.0)  # fmt: skip
        ia = side_interval(ga, keys, name, va)
        ib = side_interval(gb, keys, name, vb)
        out[name] = FigurePair(name, va, vb, ia, ib, moved)
    rounds = min(min(len(ga[k]), len(gb[k])) for k in keys)
    unmatched = len(set(ga) ^ set(gb))
    return PairedFigures(out, len(keys), unmatched, rounds, drift)


def side_figures(samples: Sequence[RequestSample]) -> dict[str, Interval] | None:
    """One side's tok/s, commit and step time, balanced over its passages, each with its
    within-passage interval (`side_interval`); None without a usable request."""
    groups = _by_passage(usable(samples))
    if not groups:
        return None
    keys = sorted(groups)
    pooled = balanced_pool(groups, keys)
    return {name: side_interval(groups, keys, name, pick(pooled)) for name, pick in POOLED.items()}
