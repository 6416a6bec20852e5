"""Student's t quantiles at any level, in pure Python (the console has no SciPy).

A comparison judges several rows at once, so its per-row level depends on how many rows
there are (`pairing.family_level`); a fixed table at 95% or 99% cannot serve that. The t
distribution's CDF is the regularized incomplete beta function, evaluated here by its
continued fraction (Lentz's method) and inverted by bisection; results are cached, since
a console asks for a handful of (level, df) pairs over and over.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_EPS = 1e-14
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                    -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):  # fmt: skip
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + num / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))  # fmt: skip
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def two_sided_tail(t: float, df: float) -> float:
    """P(|T| > t) for Student's t with `df` degrees of freedom."""
    return _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


@lru_cache(maxsize=512)
def t_quantile(level: float, df: int) -> float:
    """The t that a two-sided `level` interval spans on `df` >= 1 degrees of freedom
    (the 1 - (1 - level)/2 quantile): 12.706 at 95% on one, 2.576 at 99% on many."""
    if not 0.0 < level < 1.0 or df < 1:
        raise ValueError(f"need 0 < level < 1 and df >= 1, not level {level}, df {df}")
    alpha = 1.0 - level
    lo, hi = 0.0, max(10.0, 2.0 * z_quantile(level))
    while two_sided_tail(hi, df) > alpha:
        hi *= 2.0
    for _ in range(200):  # bisection: the tail falls monotonically in t
        mid = (lo + hi) / 2.0
        if two_sided_tail(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9 * hi:
            break
    return (lo + hi) / 2.0


def z_quantile(level: float) -> float:
    """The normal z a two-sided `level` interval spans (1.960 at 95%, 2.576 at 99%)."""
    return NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
