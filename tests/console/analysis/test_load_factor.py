"""The load factor and a typed pair across concurrencies, on the synthetic engine of
test_load_table whose cost per row is known: one stream's tok/s at N is
COMMIT / (FIXED + PER_ROW N TREE), so the factor from 1 to 4 is 2.6 / 7.4."""

from __future__ import annotations

import pytest

from console.analysis.load_factor import judge_load, load_factor
from console.analysis.load_table import LoadError
from tests.console.analysis.test_load_table import COMMIT, _run, _step_s


def _rate(n: int) -> float:
    return COMMIT / _step_s(n, True)


def test_the_factor_is_the_fall_the_cost_model_gives_with_an_interval_around_it() -> None:
    samples = _run()
    f = load_factor(samples, spec_hash="spec", from_n=1, to_n=4, source="run 1")
    truth = _rate(4) / _rate(1)
    assert f.ratio.low <= truth <= f.ratio.high and f.ratio.low < f.ratio.value < f.ratio.high
    assert f.ratio.value == pytest.approx(truth, rel=0.05)
    # between measured levels: linear in log N, between the two around it
    mid = load_factor(samples, spec_hash="spec", from_n=1, to_n=3, source="run 1").ratio.value
    assert f.ratio.value < mid < load_factor(samples, spec_hash="spec", from_n=1, to_n=2,
                                             source="run 1").ratio.value  # fmt: skip
    with pytest.raises(LoadError, match="outside the load run's levels"):
        load_factor(samples, spec_hash="spec", from_n=1, to_n=16, source="run 1")


def test_a_typed_pair_the_load_explains_is_physics_and_a_slower_stream_is_not() -> None:
    samples = _run()
    alone, loaded = _rate(1), _rate(4)
    fine = judge_load(samples, spec_hash="spec", observed=loaded, at_n=4, baseline=alone)
    assert fine.outcome == "physics", fine.lines()
    assert fine.residual.contains(1.0) and "load explains it" in fine.headline
    assert any(line.strip().startswith("load: one stream at concurrency 1 -> 4")
               for line in fine.lines())  # fmt: skip
    # a stream 40% slower than the load explains: a bug at that concurrency
    slow = judge_load(samples, spec_hash="spec", observed=0.6 * loaded, at_n=4, baseline=alone)
    assert slow.outcome == "not physics", slow.lines()
    assert slow.residual.high < 1.0
    # read without the factor the same pair is a 3x fall: the factor is what explains it
    assert alone / loaded > 2.5
    assert fine.as_dict()["factor"]["from"] == 1 and fine.as_dict()["concurrency"] == 4
