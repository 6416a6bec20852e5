"""Scoring of the verdict benchmark, on synthetic judgements (no engine)."""

from __future__ import annotations

import pytest

from console.analysis.verdict import Judgement, Observed
from console.experiments.verdict_bench import (
    SCENARIOS,
    SMALL,
    BenchResult,
    Trial,
    false_alarms,
    right,
    scores,
    trial_of,
)


def _trial(name: str, outcome: str, effect: float | None, run: int = 0) -> Trial:
    j = Judgement(outcome, f"{outcome}.", Observed.typed(100.0, 256.0, "code"))  # type: ignore[arg-type]
    return trial_of(SCENARIOS[name], run, effect, j)


def test_right_is_the_true_outcome_or_no_call_on_a_small_effect() -> None:
    assert right("physics", "physics", 0.5)
    assert right("not physics", "not physics", -0.4)
    assert not right("physics", "not physics", 0.0)  # a false alarm, whatever the effect
    assert not right("not physics", "physics", -0.6)
    # "not enough evidence" is wrong only when the true effect is over 15%
    assert right("physics", "not enough evidence", 0.02)
    assert right("not physics", "not enough evidence", -SMALL)
    assert not right("physics", "not enough evidence", -0.36)
    assert not right("not physics", "not enough evidence", -0.5)
    assert not right("physics", "not enough evidence", None)


def test_scores_count_outcomes_accuracy_and_false_alarms_per_scenario() -> None:
    trials = [
        _trial("null", "physics", 0.01, 0),
        _trial("null", "not physics", 0.02, 1),  # a false alarm
        _trial("null", "not enough evidence", -0.03, 2),  # small effect: not wrong
        _trial("context", "physics", -0.4, 0),
        _trial("context", "not enough evidence", -0.45, 1),  # big effect: wrong
        _trial("spec-off", "not physics", -0.6, 0),
        _trial("spec-off", "physics", -0.6, 1),  # a miss, not a false alarm
    ]
    by = {s.scenario.name: s for s in scores(trials)}
    assert list(by) == ["null", "context", "spec-off"]
    assert by["null"].counts == {"physics": 1, "not physics": 1, "not enough evidence": 1}
    assert (by["null"].n_right, by["null"].accuracy) == (2, pytest.approx(2 / 3))
    assert by["context"].n_right == 1 and by["spec-off"].n_right == 1
    assert false_alarms(trials) == (1, 5)
    effect = by["context"].as_dict()["true_effect"]
    assert effect == {"median": pytest.approx(-0.425), "min": -0.45, "max": -0.4}

    result = BenchResult(trials, {"runs": 3}, {"port": 1}, {"port": 1}, seconds=12.0)
    data = result.as_dict()
    assert data["restored"] and data["false_alarms"] == {
        "count": 1, "of": 5, "rate": 0.2, "null": 1,
    }  # fmt: skip
    assert [s["accuracy"] for s in data["scenarios"]] == [pytest.approx(2 / 3), 0.5, 0.5]
    assert {t["scenario"] for t in data["trials"]} == {"null", "context", "spec-off"}
    table = "\n".join(result.table())
    assert "null" in table and "2/3 67%" in table and "+1% (-3%..+2%)" in table
    assert "false alarms ('not physics' where the truth is physics): 1/5; on null: 1/3" in table
    assert not BenchResult(trials, {}, {"port": 1}, {"port": 2}).restored
