"""Goodness of fit for the losslessness tests: Pearson's chi-square of observed token
counts against exact probabilities, with a critical value at a stated false-failure rate.

Why chi-square and not the total-variation distance itself: for N draws the empirical TV
of a correct sampler is ~sqrt(K / N) by chance alone, so a TV threshold needs many more
draws than the chi-square, whose power against a deviation d (sum |d| = 2 TV) is its
noncentrality N * sum(d_i^2 / p_i). The tests state, for their N, the smallest TV that
fails: a deviation moving mass TV between two cells of probability ~0.15 has
noncentrality ~ N * 2 * TV^2 / 0.15; the worst case, d proportional to p, ~ 4 N TV^2.
"""

from __future__ import annotations

import math
from statistics import NormalDist

MIN_EXPECTED = 5.0  # cells expected fewer times than this are pooled (chi-square's rule)


def chi2_critical(dof: int, false_failure: float) -> float:
    """The chi-square quantile 1 - false_failure by Wilson-Hilferty: for dof >= 3 at these
    tails it is 0-5% above the exact quantile, so the false-failure rate is at most the
    stated one."""
    z = NormalDist().inv_cdf(1 - false_failure)
    a = 2 / (9 * dof)
    return dof * (1 - a + z * math.sqrt(a)) ** 3


def chi_square(counts: list[int], probs: list[float]) -> tuple[float, int]:
    """Pearson's statistic and its degrees of freedom, rare cells pooled into one."""
    n = sum(counts)
    cells: list[tuple[float, float]] = []
    pool_o = pool_e = 0.0
    for o, p in zip(counts, probs, strict=True):
        e = n * p
        if e < MIN_EXPECTED:
            pool_o, pool_e = pool_o + o, pool_e + e
        else:
            cells.append((o, e))
    if pool_e > 0 or pool_o > 0:
        cells.append((pool_o, max(pool_e, 1e-12)))
    stat = sum((o - e) ** 2 / e for o, e in cells)
    return stat, len(cells) - 1


def assert_fits(counts: list[int], probs: list[float], false_failure: float, what: str) -> None:
    stat, dof = chi_square(counts, probs)
    if dof < 1:
        return
    crit = chi2_critical(dof, false_failure)
    n = sum(counts)
    tv = 0.5 * sum(abs(c / n - p) for c, p in zip(counts, probs, strict=True))
    assert stat <= crit, f"{what}: chi2 {stat:.1f} > {crit:.1f} (dof {dof}, N {n}, TV {tv:.4f})"
