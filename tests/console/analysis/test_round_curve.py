"""The per-round curve: windows pooled by context position, rolling means, loop marks
that line up with the rounds that committed the looping tokens."""

from __future__ import annotations

import math

from console.analysis.round_curve import repeated_ngram_marks, round_curve, sample_curve
from tests.console.experiments.test_breakeven import sample


def _rounds(commits: list[int], start: int = 100, step_s: float = 0.01) -> list[list[float]]:
    out, context = [], start
    for i, c in enumerate(commits):
        out.append([float(context), step_s * (1 + i / 100), float(c)])
        context += c
    return out


def test_windows_pool_rounds_by_context_and_roll() -> None:
    rounds = _rounds([4] * 8 + [2] * 8)  # acceptance halves halfway through
    curve = round_curve(rounds, bin_tokens=16, smooth=2)
    assert curve.bin_tokens == 16 and len(curve.rounds) == 16
    first, last = curve.windows[0], curve.windows[-1]
    assert (first.context_start, first.rounds, first.commit) == (100, 4, 4.0)
    assert last.commit == 2.0 and last.context_end >= rounds[-1][0]
    for w in curve.windows:
        assert math.isclose(w.tok_s, w.commit / w.step_s)  # pooled: commit / step is the rate
    # Rolling: pooled over this window and the one before it.
    w2, w3 = curve.windows[1], curve.windows[2]
    assert math.isclose(w3.commit_rolling, (w2.tokens + w3.tokens) / (w2.rounds + w3.rounds))
    assert sum(w.rounds for w in curve.windows) == 16
    assert "commit 4.00 -> 2.00" in curve.summary()
    assert curve.looping_from is None  # no output given: no loop marks
    assert all(w.repeated is None and not w.looping for w in curve.windows)


def test_default_bins_split_the_span_into_about_sixteen_windows() -> None:
    curve = round_curve(_rounds([3] * 85))
    assert 12 <= len(curve.windows) <= 17
    assert round_curve([]).windows == () and "no rounds" in round_curve([]).summary()


def test_a_loop_is_marked_where_it_starts() -> None:
    fresh = list(range(1000, 1064))  # 64 distinct tokens
    loop = [7, 8, 9, 10, 11, 12] * 11  # then a 6-token cycle
    output = [1, *fresh, *loop]  # the first token comes from the prefill
    commits = [2] * 32 + [6] * 11
    rounds = _rounds(commits, start=500)
    assert sum(commits) + 1 == len(output)
    curve = round_curve(rounds, output, bin_tokens=16)
    assert curve.looping_from is not None and 560 <= curve.looping_from <= 580
    assert not curve.windows[0].looping and curve.windows[-1].looping
    assert curve.rounds[0].repeated == 0.0 and curve.rounds[-1].repeated == 1.0
    assert "loops from context" in curve.summary()
    assert curve.as_dict()["windows"][-1]["looping"] is True


def test_marks_match_repetition_share() -> None:
    tokens = [1, 2, 3, 1, 2, 3, 1, 2, 3, 4]
    marks = repeated_ngram_marks(tokens, n=3)
    assert marks == [False, False, False, False, False, True, True, True, True, False]


def test_sample_curve_reads_a_request_sample() -> None:
    s = sample(100, 9, 3, 0.03, "x", rounds=_rounds([3, 3, 2]), output_ids=list(range(9)))
    curve = sample_curve(s, bin_tokens=4)
    assert curve is not None and [r.context for r in curve.rounds] == [100, 103, 106]
    assert curve.rounds[0].repeated == 0.0
    assert sample_curve(sample(100, 9, 3, 0.03, "x")) is None


def test_the_last_round_is_capped_at_the_output() -> None:
    # 1 prefill token + 3 + 3 + 5 = 12 committed, but only 10 tokens were asked for:
    # the engine's last round committed 2 past max_tokens.
    rounds = _rounds([3, 3, 5])
    curve = round_curve(rounds, output_tokens=10, bin_tokens=4)
    assert [r.commit for r in curve.rounds] == [3.0, 3.0, 3.0]
    assert sum(w.tokens for w in curve.windows) == 9
