"""Passages as a random effect: how far a figure on prompts the sweep never read can sit
from the model's prediction for its text type and context.

A text type at a context is a population of passages, and commit varies between them (on
the bundled pair by 4x between windows of one text). A sweep reads a few of them, so the
model's figure at a point is the mean of those few; a figure measured on other passages
(the operator's own traffic, a typed number) differs from it by the passage effect as
well as by timing. The model, on the log scale of tok/s:

    log y(type k, context c, passage p, read r) = m_k(c) + u_kp + b + e_r

- `m_k(c)`: the fixed effects the model fits (commit per type, step time per context);
- `u_kp ~ N(0, tau_k^2)`: the passage effect, one spread per text type (pooled over the
  type's contexts: every swept context then adds degrees of freedom);
- `b`: the block (time, restart) effect, the host's drift (`typed_noise`, calibration);
- `e_r`: timing noise within a passage.

A sweep point's passages give per-passage figures; their log spread `s` (with `m - 1`
degrees of freedom) estimates `tau^2 + timing/reads` at that point. A figure pooling `n`
passages the sweep never read sits from the model's mean by a normal shift of variance
`tau^2 (1/n + 1/m)`: its own passages' spread, and the spread of the model's mean over the
`m` passages it read. A draw first draws `tau` from its own uncertainty
(`s^2 df / chi2_df`), so a sweep of two passages a point gives the wide, Student-t
interval so few passages honestly allow. A comparison on the same passages both sides
(paired) has no passage term: it cancels.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from console.analysis.intervals import passage, pool, usable
from console.analysis.records import RequestSample


@dataclass(frozen=True)
class PassageSpread:
    """The between-passage spread of log tok/s for one text type: `sigma` with `df`
    degrees of freedom, pooled over `points` sweep points that read `passages` passages
    each (the fewest of them: the model's mean at a point rests on so many)."""

    text_type: str
    sigma: float
    df: int
    passages: int
    points: int

    def draw(self, rng: random.Random, figure_passages: int = 1) -> float:
        """One draw of the log shift between a figure that is the median of requests on
        `figure_passages` unseen passages and the model's mean at its point: the median of
        that many passage effects, less the model's own (the mean of its `passages`)."""
        if self.df < 1 or self.sigma <= 0:
            return 0.0
        sigma = self.sigma * math.sqrt(self.df / rng.gammavariate(self.df / 2, 2.0))
        own = statistics.median(rng.gauss(0.0, sigma) for _ in range(max(1, figure_passages)))
        return own - rng.gauss(0.0, sigma / math.sqrt(max(1, self.passages)))

    def text(self) -> str:
        return (f"{self.text_type} passages ± {math.expm1(1.96 * self.sigma):.0%} a passage "
                f"({self.passages} passages a point, {self.df} df)")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {"text_type": self.text_type, "sigma_log": self.sigma, "df": self.df,
                "passages": self.passages, "points": self.points}  # fmt: skip


def passage_figures(samples: Sequence[RequestSample]) -> list[float]:
    """Each passage's pooled tok/s (all its reads: tokens over time), at one point."""
    return [pool(g).tok_s for g in _by_passage(samples).values()]


def passage_spread(
    samples: Sequence[RequestSample], text_type: str, timing: float = 0.0
) -> PassageSpread | None:
    """The type's between-passage spread from the sweep points of that type that read two
    passages or more; None when none did (no spread can be told from one passage).

    A passage's figure over `r` reads holds timing noise of variance `t^2 / r` too, and a
    typed figure draws its timing noise on its own (`typed_noise`), so that share comes
    off: `t` is the within-passage spread where passages were read twice or more, else
    `timing` (the typed figure's own noise, log SD)."""
    points: dict[float, list[RequestSample]] = {}
    for s in samples:
        if s.text_type == text_type and s.decode_context is not None:
            points.setdefault(round(s.decode_context), []).append(s)
    between = _Pooled()
    within = _Pooled()
    reads: list[int] = []
    fewest, used = None, 0
    for group in points.values():
        by = _by_passage(group)
        logs = [math.log(pool(g).tok_s) for g in by.values()]
        for g in by.values():
            reads.append(len(g))
            if len(g) >= 2:
                within.add([math.log(x.decode_tok_s or pool([x]).tok_s) for x in g])
        if len(logs) < 2:
            continue
        between.add(logs)
        fewest = len(logs) if fewest is None else min(fewest, len(logs))
        used += 1
    if between.df == 0 or fewest is None:
        return None
    t2 = within.variance if within.df else timing**2
    tau2 = max(0.0, between.variance - t2 / statistics.median(reads))
    return PassageSpread(text_type, math.sqrt(tau2), between.df, fewest, used)


class _Pooled:
    """A variance pooled over groups: sum of squares about each group's mean, and df."""

    def __init__(self) -> None:
        self.ss, self.df = 0.0, 0

    def add(self, values: Sequence[float]) -> None:
        if len(values) >= 2:
            self.ss += statistics.variance(values) * (len(values) - 1)
            self.df += len(values) - 1

    @property
    def variance(self) -> float:
        return self.ss / self.df if self.df else 0.0


def _by_passage(samples: Sequence[RequestSample]) -> dict[str, list[RequestSample]]:
    by: dict[str, list[RequestSample]] = {}
    for s in usable(samples):
        by.setdefault(passage(s), []).append(s)
    return by


def prediction_band(
    point: float, spread: PassageSpread, figure_passages: int = 1, level: float = 0.95,
    *, draws: int = 4000, seed: int = 0,
) -> tuple[float, float]:  # fmt: skip
    """The `level` interval for a figure on `figure_passages` unseen passages whose
    model mean is `point` (tok/s): the passage term alone, by simulation of its draw."""
    rng = random.Random(seed)
    shifts = sorted(spread.draw(rng, figure_passages) for _ in range(draws))
    tail = (1 - level) / 2
    lo = shifts[int(tail * (draws - 1))]
    hi = shifts[int((1 - tail) * (draws - 1))]
    return point * math.exp(lo), point * math.exp(hi)
