"""When a comparison that reads on may stop: a group-sequential test with alpha spending.

A comparison across a restart is judged, read again, judged again (`baseline_confirm`).
Each look judged at the same 99% is another chance for a null change to pass it: four
looks at 99% each raise about 2.5% false alarms, not 1%. So a comparison that may read
on spends its error level over its looks instead (Lan & DeMets 1983, "Discrete sequential
boundaries for clinical trials", Biometrika 70: 659-663), with the O'Brien-Fleming-type
spending function in its two-sided form (Jennison & Turnbull 2000, "Group Sequential
Methods with Applications to Clinical Trials", section 7.2; `alpha / 2` spent on each
side):

    spent(t) = 4 - 4 Phi(z_{1 - alpha/4} / sqrt(t)),     spent(1) = alpha

over the information fraction `t` (the look's information over the most the comparison
may read). It is strict early and close to the nominal level at the last look: at 1%
over four equal looks the boundaries are z 5.49, 3.80, 3.04, 2.60 (2.576 for one look).
A change is a finding only at a look where it crosses that look's boundary; then the
chance that a null comparison shows a finding at any of its looks is at most `alpha`,
whatever else decides whether it reads on or stops (a width target, a step time that
moved, blocks that disagree), as long as that does not move the looks' information
fractions with the change itself.

Each boundary is found so that the chance of crossing first at that look is what the
spending function allows for it, computed by the recursive numerical integration of
Armitage, McPherson & Rowe (1969, JRSS A 132: 235-244) on the score scale (Jennison &
Turnbull chapter 19), here with Simpson's rule; pure Python (the console has no SciPy).
The boundaries are z statistics; a look's nominal level (`look_level`) is what the
interval of that look is built at (a t quantile of it for few pairs, as at one look).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from statistics import NormalDist

_NORMAL = NormalDist()
GRID = 161  # Simpson points over a look's continuation region (odd); ~1e-5 on alpha
_SQRT2 = math.sqrt(2.0)


def _cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / _SQRT2)


def _pdf(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def obrien_fleming_spent(t: float, alpha: float) -> float:
    """The two-sided error spent by information fraction `t` (0 < t; 1 or more: all of
    `alpha`)."""
    if t <= 0.0:
        return 0.0
    if t >= 1.0:
        return alpha
    z = _NORMAL.inv_cdf(1.0 - alpha / 4.0)
    return 4.0 - 4.0 * _cdf(z / math.sqrt(t))


def _simpson_weights(n: int, width: float) -> list[float]:
    h = width / (n - 1)
    return [h / 3.0 * (1 if i in (0, n - 1) else 4 if i % 2 else 2) for i in range(n)]


class _Integrator:
    """The density of the score `S_k` (sum of independent N(0, t_j - t_j-1) increments)
    over the region where no earlier look crossed, look by look."""

    def __init__(self) -> None:
        self.nodes: list[float] = []  # score values
        self.mass: list[float] = []  # density x Simpson weight at each node
        self.t = 0.0

    def crossing(self, t: float, bound: float) -> float:
        """P(no earlier crossing, and |S| >= bound sqrt(t) at information `t`)."""
        b = bound * math.sqrt(t)
        if not self.nodes:
            return 2.0 * (1.0 - _cdf(bound))
        sd = math.sqrt(t - self.t)
        return sum(m * (_cdf((-b - u) / sd) + 1.0 - _cdf((b - u) / sd))
                   for u, m in zip(self.nodes, self.mass, strict=True))  # fmt: skip

    def advance(self, t: float, bound: float) -> None:
        """Move to information `t`, keeping only the scores inside the boundary."""
        b = bound * math.sqrt(t)
        nodes = [-b + 2.0 * b * i / (GRID - 1) for i in range(GRID)]
        weights = _simpson_weights(GRID, 2.0 * b)
        if not self.nodes:
            sd = math.sqrt(t)
            density = [_pdf(s / sd) / sd for s in nodes]
        else:
            sd = math.sqrt(t - self.t)
            density = [sum(m * _pdf((s - u) / sd) for u, m in zip(self.nodes, self.mass,
                                                                   strict=True)) / sd
                       for s in nodes]  # fmt: skip
        self.nodes, self.mass, self.t = nodes, [d * w for d, w in zip(density, weights,
                                                                      strict=True)], t  # fmt: skip


def crossing_probabilities(fractions: tuple[float, ...], bounds: tuple[float, ...]) -> list[float]:
    """Under no change, the chance of crossing first at each look (z `bounds` at
    information `fractions`, increasing)."""
    walk, out = _Integrator(), []
    for t, c in zip(fractions, bounds, strict=True):
        out.append(walk.crossing(t, c))
        walk.advance(t, c)
    return out


def _check(fractions: tuple[float, ...], alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"need 0 < alpha < 1, not {alpha}")
    if not fractions or any(b < a for a, b in itertools.pairwise(fractions)):
        raise ValueError(f"information fractions must not fall: {fractions}")
    if fractions[0] <= 0.0:
        raise ValueError(f"the first look needs information above 0: {fractions}")


@lru_cache(maxsize=256)
def boundaries(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """The z boundary of each look at information `fractions` (capped at 1), so that a
    null comparison crosses at some look with chance `spent(last fraction)` <= `alpha`.
    A look with no more information than the one before it has nothing to spend: its
    boundary is infinite (no finding there)."""
    fractions = tuple(min(1.0, t) for t in fractions)
    _check(fractions, alpha)
    walk, out, spent_before = _Integrator(), [], 0.0
    for t in fractions:
        if t <= walk.t:
            out.append(math.inf)
            continue
        share = obrien_fleming_spent(t, alpha) - spent_before
        lo, hi = 0.5, 12.0
        if walk.crossing(t, hi) >= share:  # nothing left to spend: never crosses
            c = math.inf
        else:
            for _ in range(60):  # bisection: the crossing chance falls with the bound
                mid = (lo + hi) / 2.0
                lo, hi = (mid, hi) if walk.crossing(t, mid) > share else (lo, mid)
            c = (lo + hi) / 2.0
        out.append(c)
        spent_before += walk.crossing(t, c) if math.isfinite(c) else 0.0
        walk.advance(t, min(c, 12.0))
    return tuple(out)


def look_level(fractions: tuple[float, ...], alpha: float) -> float:
    """The two-sided nominal level of the last look of `fractions` (its interval is built
    at it): 1 - alpha at a single look at full information."""
    if len(fractions) == 1 and fractions[0] >= 1.0:
        return 1.0 - alpha  # exactly the fixed-sample level, without the integration
    c = boundaries(tuple(fractions), alpha)[-1]
    return 1.0 - 2.0 * (1.0 - _cdf(c)) if math.isfinite(c) else 1.0 - 1e-12


ONE_LOOK: tuple[float, ...] = (1.0,)  # a comparison judged once: the whole level there
