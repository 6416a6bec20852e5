"""The stopping rule: Lan-DeMets O'Brien-Fleming-type spending, checked against published
boundaries, and a seeded simulation of null comparisons read on over several looks."""

from __future__ import annotations

import math
import random

import pytest

from console.analysis.pairing import drift_z, family_level
from console.analysis.sequential import (
    ONE_LOOK,
    boundaries,
    crossing_probabilities,
    look_level,
    obrien_fleming_spent,
)
from console.analysis.student_t import z_quantile
from console.analysis.thresholds import CHANGE_LEVEL

ALPHA = 1.0 - CHANGE_LEVEL


def _equal(k: int) -> tuple[float, ...]:
    return tuple((i + 1) / k for i in range(k))


# Lan-DeMets O'Brien-Fleming-type boundaries, two-sided alpha 0.05, equally spaced looks
# (gsDesign `sfLDOF` / rpact `asOF`, test.type 2; Jennison & Turnbull 2000, section 7.2).
PUBLISHED_SPENDING = {
    2: (2.963, 1.969),
    3: (3.710, 2.511, 1.993),
    4: (4.333, 2.963, 2.359, 2.014),
    5: (4.877, 3.357, 2.680, 2.290, 2.031),
}
# The classical constant-shape designs (Jennison & Turnbull 2000, tables 2.1 and 2.3):
# Pocock C_P(K, 0.05) at every look; O'Brien-Fleming C_B(K, 0.05) x sqrt(K / k) at look k.
POCOCK = {2: 2.178, 3: 2.289, 4: 2.361, 5: 2.413}
OBRIEN_FLEMING = {2: 1.977, 3: 2.004, 4: 2.024, 5: 2.040}


@pytest.mark.parametrize("k", sorted(PUBLISHED_SPENDING))
def test_spending_boundaries_match_the_published_tables(k: int) -> None:
    got = boundaries(_equal(k), 0.05)
    assert got == pytest.approx(PUBLISHED_SPENDING[k], abs=2e-3)


@pytest.mark.parametrize("k", sorted(POCOCK))
def test_the_integration_gives_the_classical_designs_their_level(k: int) -> None:
    pocock = crossing_probabilities(_equal(k), (POCOCK[k],) * k)
    obf = crossing_probabilities(_equal(k), tuple(OBRIEN_FLEMING[k] * math.sqrt(k / (i + 1))
                                                  for i in range(k)))  # fmt: skip
    # the tables give three decimals: the level to within what that rounding moves
    assert sum(pocock) == pytest.approx(0.05, abs=3e-4)
    assert sum(obf) == pytest.approx(0.05, abs=3e-4)


def test_each_look_spends_its_share_and_one_look_is_the_fixed_level() -> None:
    looks = (0.25, 0.5, 0.75, 1.0)
    crossed = crossing_probabilities(looks, boundaries(looks, ALPHA))
    cumulative = [sum(crossed[: i + 1]) for i in range(4)]
    assert cumulative == pytest.approx([obrien_fleming_spent(t, ALPHA) for t in looks], abs=1e-6)
    assert look_level(ONE_LOOK, ALPHA) == CHANGE_LEVEL
    assert family_level(4) == pytest.approx(1 - ALPHA / 4) and drift_z() == z_quantile(0.99)
    # strict early, near the nominal level at the last look
    assert boundaries(looks, ALPHA)[0] > 5.0 and boundaries(looks, ALPHA)[-1] < 2.7
    # a look that adds no information (a block left out) has nothing to spend
    assert boundaries((0.25, 0.5, 0.5), ALPHA)[2] == math.inf


def _false_alarms(rule: str, looks: int, rows: int, trials: int, seed: int) -> float:
    """Null comparisons of `rows` rows, each read on over `looks` equal looks (each look
    adds independent normal information, as a block of each side does); the share of
    comparisons with a finding on any row at any look, under `rule`."""
    rng = random.Random(seed)
    fractions = _equal(looks)
    if rule == "spent":  # the product's: each look at its share of the rows' level
        zs = [z_quantile(family_level(rows, fractions[: i + 1])) for i in range(looks)]
    else:  # today's before this rule: every look at the one-look family level
        zs = [z_quantile(family_level(rows))] * looks
    alarms = 0
    for _ in range(trials):
        hit = False
        for _row in range(rows):
            score = 0.0
            for i in range(looks):
                score += rng.gauss(0.0, 1.0)  # information 1 per look
                if abs(score) / math.sqrt(i + 1) > zs[i]:
                    hit = True
                    break
            if hit:
                break
        alarms += hit
    return alarms / trials


@pytest.mark.parametrize("rows", [1, 4])
def test_reading_on_over_four_looks_keeps_false_alarms_at_the_stated_level(rows: int) -> None:
    """The rule's claim, simulated: a null comparison read on over four looks (every look
    judged, as a reading again is) raises a false "change" in at most 1% of comparisons,
    rows together. Judged at 99% at every look, as before, it raises over twice that."""
    trials = 20000
    se = math.sqrt(ALPHA * (1 - ALPHA) / trials)
    spent = _false_alarms("spent", 4, rows, trials, seed=1)
    every_look = _false_alarms("every look", 4, rows, trials, seed=1)
    assert spent <= ALPHA + 3 * se, spent
    assert every_look > ALPHA + 6 * se, every_look  # the multiple-look error
    assert every_look > 2 * spent
