"""Scoring of the verdict benchmark, on synthetic judgements (no engine)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from console.analysis.verdict import Judgement, Observed
from console.experiments.verdict_bench import (
    SCENARIOS,
    SMALL,
    BenchResult,
    Trial,
    false_alarms,
    path_scores,
    right,
    scores,
    trial_of,
    upper_bound,
)
from console.experiments.verdict_paths import baseline_outcome
from console.measure.session import MeasureError


def _trial(name: str, outcome: str, effect: float | None, run: int = 0,
           path: str = "explain") -> Trial:  # fmt: skip
    j = Judgement(outcome, f"{outcome}.", Observed.typed(100.0, 256.0, "code"))  # type: ignore[arg-type]
    return trial_of(SCENARIOS[name], run, effect, j, path)


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


def test_a_gap_the_host_drifted_into_a_no_effect_scenario_is_not_its_true_effect() -> None:
    """Parsers across a restart read +20% when the host drifted between the blocks: the
    scenario cannot move decode speed, so "not enough evidence" is scored against its
    true effect (0), not the drift; the round slowdown's bound does not replace its
    measured effect."""
    from dataclasses import replace

    from console.experiments.verdict_bench import not_enough_on_big

    drifted = replace(_trial("parsers", "not enough evidence", 0.20), constructed=0.0)
    assert drifted.right and drifted.true_effect == 0.0
    assert not _trial("parsers", "not enough evidence", 0.20).right  # no construction known
    slowed = replace(_trial("round-delay", "not enough evidence", -0.27), constructed=-0.23)
    assert not slowed.right and slowed.true_effect == -0.27
    big = replace(_trial("parsers", "not enough evidence", 0.30), constructed=0.0)
    assert not_enough_on_big([big, slowed]) == (1, 1)


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
        "count": 1, "of": 5, "rate": 0.2, "null": 1, "upper_95": pytest.approx(0.657, abs=1e-3),
    }  # fmt: skip
    assert [s["accuracy"] for s in data["scenarios"]] == [pytest.approx(2 / 3), 0.5, 0.5]
    assert {t["scenario"] for t in data["trials"]} == {"null", "context", "spec-off"}
    table = "\n".join(result.table())
    assert "null" in table and "2/3 67%" in table and "+1% (-3%..+2%)" in table
    assert ("false alarms ('not physics' where the truth is physics): 1/5 (95% upper bound "
            "65.7%); on null: 1/3") in table  # fmt: skip
    assert not BenchResult(trials, {}, {"port": 1}, {"port": 2}).restored


def test_the_false_alarm_bound_is_clopper_pearson_one_sided() -> None:
    # 0 in n: 1 - 0.05^(1/n), about 3/n (the rule of three)
    assert upper_bound(0, 30) == pytest.approx(1 - 0.05 ** (1 / 30), abs=1e-6)
    assert upper_bound(0, 30) == pytest.approx(0.0950, abs=1e-4)
    assert upper_bound(1, 10) == pytest.approx(0.3942, abs=1e-4)
    assert upper_bound(10, 10) == 1.0 and upper_bound(0, 0) is None


def test_accuracy_per_path_and_false_alarms_per_path() -> None:
    trials = [
        _trial("parsers", "physics", 0.01, path="typed"),
        _trial("parsers", "not enough evidence", 0.02, path="explain"),
        _trial("parsers", "not physics", 0.12, path="baseline-ab"),  # the field's false alarm
        _trial("parsers", "physics", -0.01, path="baseline-abab"),
        _trial("round-delay", "not physics", -0.2, path="baseline-ab"),
        _trial("round-delay", "not enough evidence", -0.21, path="typed"),  # a miss
    ]
    paths = path_scores(trials)
    assert list(paths) == ["typed", "explain", "baseline-ab", "baseline-abab"]
    assert paths["baseline-ab"] == {"trials": 2, "right": 1, "accuracy": 0.5, "false_alarms": 1,
        "physics_trials": 1,
        "outcomes": {"physics": 0, "not physics": 2, "not enough evidence": 0}}  # fmt: skip
    assert paths["typed"]["right"] == 1 and paths["typed"]["trials"] == 2
    by = {s.scenario.name: s.as_dict() for s in scores(trials)}
    assert by["parsers"]["by_path"]["baseline-ab"]["accuracy"] == 0.0
    assert by["round-delay"]["by_path"]["typed"]["accuracy"] == 0.0
    table = "\n".join(BenchResult(trials, {}, {}, {}).table())
    assert "path baseline-ab" in table and "false alarms 1/1" in table


class _Pair:
    def __init__(self, finding: bool, text: str = "+12% [+4%…+19%]") -> None:
        self.finding, self._text = finding, text

    def change_text(self) -> str:
        return self._text


class _Row:
    def __init__(self, tok: bool, commit: bool = False, step: bool = False,
                 outcome: str = "physics") -> None:  # fmt: skip
        self.text_type, self.context = "code", 256
        self.verdict = SimpleNamespace(outcome=outcome)
        self.decode_tok_s, self.commit_len, self.step_time_s = (
            _Pair(tok),
            _Pair(commit, "no change (exactly equal)"),
            _Pair(step, "-10% [..]"),
        )


def test_set_baseline_is_read_the_way_an_operator_reads_its_table() -> None:
    assert baseline_outcome([_Row(False), _Row(False)])[0] == "physics"
    row = _Row(True, step=True, outcome="not physics")
    outcome, headline = baseline_outcome([_Row(False), row])
    assert outcome == "not physics" and "tok/s +12%" in headline and "step -10%" in headline
    # a finding whose row reads it as under the 10% worth a bug hunt (the one reading,
    # `answer`) does not make the table "not physics"
    assert baseline_outcome([_Row(False), _Row(True, step=True)])[0] == "physics"
    assert baseline_outcome([])[0] == "not enough evidence"
    # no finding, but a row whose own verdict is too wide to tell: the table says so
    outcome, headline = baseline_outcome([_Row(False), _Row(False, outcome="not enough evidence")])
    assert outcome == "not enough evidence" and "code 256 too wide to tell" in headline


def test_a_baseline_trials_table_is_kept_in_its_json() -> None:
    """A wrong `set --baseline` answer can be read back from `--save`: its rows, the order
    it used and its notes (only the headline was kept, and a miss could not be told
    from a slow spell or a rule)."""
    from console.analysis.verdict_scoring import Trial

    rows = [{"text_type": "code", "context": 256, "moved": "too wide to tell"}]
    detail = {"rows": rows, "order": "A-B repeated", "notes": ["read again"]}
    trial = Trial("round-delay", 0, "not physics", "not enough evidence", -0.18, "Not enough",
                  detail, "baseline-ab")  # fmt: skip
    saved = trial.as_dict()
    assert saved["rows"] == rows and saved["order"] == "A-B repeated"
    assert saved["notes"] == ["read again"]
    typed = Trial("null", 0, "physics", "physics", 0.0, "Physics", {"factors": []}, "typed")
    assert "rows" not in typed.as_dict()


def test_the_round_delay_is_a_share_of_each_rounds_compute_and_its_effect_is_known() -> None:
    from console.experiments.verdict_scenarios import SCENARIOS, SLOWER

    changes = SCENARIOS["round-delay"].changes("builtin", {})
    assert changes == {"debug-round-slowdown": "0.3"} and SLOWER == 0.3
    # step x1.3 whatever the host's speed that minute: tok/s x 1/1.3, within 15-30%
    assert SCENARIOS["round-delay"].constructed == pytest.approx(-0.2308, abs=1e-4)
    # the parsers cannot move decode speed: no effect by construction, as the null's
    assert SCENARIOS["parsers"].constructed == 0.0 and SCENARIOS["null"].constructed == 0.0
    with pytest.raises(MeasureError):
        SCENARIOS["round-delay"].changes("vllm", {})


def test_own_figures_read_passages_no_sweep_reads_and_each_side_its_own() -> None:
    from console.analysis.repeat_rule import MODEL_PASSAGES
    from console.experiments.own_figures import OWN_REQUESTS, own_windows
    from console.measure.prompts import WINDOWS

    for run in range(10):
        for scenario in range(len(SCENARIOS)):
            before, after = own_windows(run, 2 * scenario), own_windows(run, 2 * scenario + 1)
            assert len(set(before)) == len(set(after)) == OWN_REQUESTS
            assert not set(before) & set(after)  # "it was" and "it is" on other prompts
            assert all(MODEL_PASSAGES <= w < WINDOWS for w in before + after)
    # the runs of one benchmark draw other passages for the same side
    assert len({tuple(own_windows(run, 0)) for run in range(10)}) == 10


def test_the_field_reports_question_is_asked_at_three_context_pairs_on_own_figures() -> None:
    from console.experiments.verdict_scenarios import TYPED_OWN

    pairs = [(s.before, s.after) for s in SCENARIOS.values() if s.name.startswith("field-report")]
    assert len(pairs) == 3 and len(set(pairs)) == 3
    for before, after in pairs:
        assert (before.text_type, after.text_type) == ("code", "prose")
        assert before.context < after.context
    assert all(TYPED_OWN in s.paths for s in SCENARIOS.values())
