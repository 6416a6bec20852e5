"""The comparison protocol on synthetic timings: unbalanced passages, injected drift, too
few rounds, and the same-point decomposition. Each case is one a real host produced: the
old per-request pooling read a parser flag as "commit +5% [+5%…+5%]" and block-to-block
drift as a step-time finding."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from console.analysis.noise_profile import Drift
from console.analysis.pairing import PairedChange, paired_figures
from console.analysis.records import RequestSample
from console.analysis.same_point import factor_sentence, judge_same_point
from console.experiments.baseline import compare_samples
from tests.console.analysis.test_intervals import BASE

# Two passages of one text type that commit differently under greedy decoding: the
# drafter guesses passage "easy" well and passage "hard" badly.
STEPS = {"easy": 16, "hard": 40}  # verify steps for the same 64 decode tokens
STEP_S = 0.004  # seconds per verify step on this synthetic host


def requests(
    counts: dict[str, int],
    *,
    slower: float = 1.0,
    noise: float = 0.01,
    seed: int = 0,
    steps: dict[str, int] = STEPS,
    t0: float = 0.0,
) -> list[RequestSample]:
    """`counts[passage]` requests of each passage, step time off by `noise` (relative sd)."""
    rng = random.Random(seed)
    out = []
    t = t0
    for name, n in counts.items():
        for _ in range(n):
            t += 1.0
            seconds = steps[name] * STEP_S * slower * math.exp(rng.gauss(0.0, noise))
            out.append(dataclasses.replace(BASE, prompt_id=name, verify_steps=steps[name],
                                           decode_time_s=seconds, t=t))  # fmt: skip
    return out


def test_unbalanced_passages_do_not_fake_an_acceptance_change() -> None:
    # The same engine, one side stopped after 3 x easy + 2 x hard, the other after 5 + 5.
    before = requests({"easy": 3, "hard": 2}, seed=1)
    after = requests({"easy": 5, "hard": 5}, seed=2)
    (row,) = compare_samples(before, after)
    # Greedy: every request of a passage commits the same; the protocol says so exactly.
    assert row.commit_len.change.ratio == pytest.approx(1.0, abs=1e-12)
    assert row.commit_len.change_text() == "no change (exact)"
    assert not row.commit_len.finding and not row.decode_tok_s.finding
    assert row.moved == "neither factor moved beyond noise"
    assert row.verdict is not None and row.verdict.outcome == "physics"


def test_a_drift_between_blocks_is_inside_the_interval_once_measured() -> None:
    # Same flags; the after block ran 6% slower (another job started, a restart's layout).
    before = requests({"easy": 4, "hard": 4}, seed=3)
    after = requests({"easy": 4, "hard": 4}, slower=1.06, seed=4, t0=100.0)
    blind = paired_figures(before, after)
    assert blind is not None and blind.figure("step_time_s").finding  # timing noise alone
    drift = Drift(shift_sd=0.04, order="A-B", source="calibrated", measured=True)
    (row,) = compare_samples(before, after, drift=drift)
    step = row.step_time_s.moved
    assert isinstance(step, PairedChange)
    assert step.drift_rel == pytest.approx(2.576 * 0.04, rel=1e-4)
    assert not row.step_time_s.finding and not row.decode_tok_s.finding
    assert row.step_time_s.change_text().startswith("within noise (+6%")
    assert "drift ± 10.3%" in drift.text() and "A-B" in drift.text()
    # bracketing leaves less of the drift: three quarters of its variance
    bracket = dataclasses.replace(drift, order="A-B-A-B")
    assert bracket.term() == pytest.approx(drift.term() * math.sqrt(0.75))
    # side by side, time drift cancels: what is left is the two processes' offset, which
    # a calibration measures apart (`process_sd`); its whole variance is the term
    assert dataclasses.replace(drift, order="side-by-side").term() == pytest.approx(drift.term())


def test_a_figure_on_too_few_rounds_says_so_instead_of_a_narrow_interval() -> None:
    before = requests({"easy": 1, "hard": 1}, seed=5)
    after = requests({"easy": 1, "hard": 1}, slower=1.3, seed=6)
    paired = paired_figures(before, after)
    assert paired is not None and paired.rounds == 1
    step = paired.figure("step_time_s")
    assert "2 pairs: too few rounds to resample" in step.change_text()
    assert not step.finding
    assert judge_same_point(paired).outcome == "not enough evidence"


def test_a_step_time_regression_at_the_same_point_is_not_physics() -> None:
    # OMP_NUM_THREADS=1 after a restart: +27% step time, commit exactly the same.
    before = requests({"easy": 3, "hard": 3}, noise=0.03, seed=7)
    after = requests({"easy": 3, "hard": 3}, noise=0.03, slower=1.27, seed=8)
    drift = Drift(shift_sd=0.03, order="A-B", source="calibrated", measured=True)
    paired = paired_figures(before, after, drift=drift)
    verdict = judge_same_point(paired, "code at context 256")
    assert verdict.outcome == "not physics" and verdict.factor == "step time"
    assert verdict.headline.startswith("Not physics: step time +")
    assert paired.figure("step_time_s").moved.ratio.contains(1.27)  # the true effect inside
    assert "(the host or the engine got slower)" in verdict.headline
    assert "commit: no change (exact)" in verdict.text()
    assert verdict.as_dict()["same_context_and_text"] is True


def test_a_same_point_interval_too_wide_to_rule_out_a_change_is_not_physics_either_way() -> None:
    # 16% slower, but the host's drift across the restart is large: the interval holds no
    # change and a change that matters; "physics: within noise" would be a guess
    before = requests({"easy": 3, "hard": 3}, noise=0.03, seed=13)
    after = requests({"easy": 3, "hard": 3}, noise=0.03, slower=1.16, seed=14)
    drift = Drift(shift_sd=0.09, order="A-B", source="calibrated", measured=True)
    paired = paired_figures(before, after, drift=drift)
    tok = paired.figure("decode_tok_s")
    assert not tok.finding and tok.moved.ratio.rel_half_width > 0.15
    verdict = judge_same_point(paired)
    assert verdict.outcome == "not enough evidence" and "too wide" in verdict.headline
    assert factor_sentence(verdict).startswith("too wide to tell (tok/s ± ")
    # most of the width is the drift, so the advice is one comparison, not more rounds
    assert "host's drift between blocks (± 26%)" in verdict.headline
    assert "more rounds of the same passages" not in verdict.headline
    # where the timing noise is most of it, more rounds are what narrows it
    noisy = paired_figures(requests({"easy": 3, "hard": 3}, noise=0.2, seed=13),
                           requests({"easy": 3, "hard": 3}, noise=0.2, seed=14))  # fmt: skip
    loud = judge_same_point(noisy)
    assert loud.outcome == "not enough evidence", loud.headline
    assert "more rounds of the same passages narrow it" in loud.headline
    # the same change with a small drift is named: step time
    calm = paired_figures(before, after, drift=dataclasses.replace(drift, shift_sd=0.01))
    assert judge_same_point(calm).factor == "step time"


def test_an_acceptance_change_is_exact_and_named() -> None:
    before = requests({"easy": 2, "hard": 2}, seed=9)
    fewer = {"easy": 14, "hard": 36}  # the drafter got better: fewer steps, same tokens
    after = requests({"easy": 2, "hard": 2}, seed=10, steps=fewer)
    paired = paired_figures(before, after)
    commit = paired.figure("commit_len")
    assert commit.moved.exact and commit.finding
    assert commit.change.ratio == pytest.approx((16 + 40) / (14 + 36))
    assert commit.change_text() == f"{(56 / 50 - 1) * 100:+.0f}% (exact)"
    verdict = judge_same_point(paired)
    assert verdict.factor == "commit" and "acceptance changed" in verdict.headline


def test_passages_only_one_side_read_are_left_out_and_counted() -> None:
    before = requests({"easy": 3, "hard": 3}, seed=11)
    after = requests({"easy": 3}, seed=12)
    paired = paired_figures(before, after)
    assert paired.passages == 1 and paired.unmatched == 1
    # on the shared passage alone, commit is that passage's: no mix difference
    assert paired.figure("commit_len").a == pytest.approx(64 / 16)
    assert paired_figures(before, requests({"hard": 2}, steps={"hard": 40}, seed=1)[:0]) is None


def _null_trial(seed: int) -> tuple[list[RequestSample], list[RequestSample]]:
    """Four points (contexts) of one unchanged engine, three rounds of two passages a side."""
    before, after = [], []
    for i, context in enumerate((64, 256, 1024, 1792)):
        for side, out in ((0, before), (1, after)):
            out += [dataclasses.replace(s, context_tokens=context)
                    for s in requests({"easy": 3, "hard": 3}, noise=0.03,
                                      seed=seed * 100 + i * 10 + side)]  # fmt: skip
    return before, after


def test_four_rows_judged_together_keep_the_false_alarm_rate_of_one() -> None:
    # At 99% per row, one of four null rows reads a finding in about 4% of comparisons;
    # the timing part taken at 99.75% for four rows keeps the whole comparison near 1%.
    trials = [_null_trial(seed) for seed in range(300)]
    alarms = sum(any(r.decode_tok_s.finding or r.step_time_s.finding
                     for r in compare_samples(b, a)) for b, a in trials)  # fmt: skip
    per_row = 0
    for b, a in trials:
        for context in (64, 256, 1024, 1792):
            one = paired_figures([s for s in b if s.context_tokens == context],
                                 [s for s in a if s.context_tokens == context])  # fmt: skip
            if one is not None and (one.figure("decode_tok_s").finding
                                    or one.figure("step_time_s").finding):  # fmt: skip
                per_row += 1
                break
    assert alarms <= 6, alarms  # 2% of 300: about 1% expected
    assert per_row > alarms and per_row >= 7, per_row  # about 4% expected one row at a time


def test_t_quantiles_match_the_published_tables() -> None:
    from console.analysis.student_t import t_quantile, z_quantile

    published = {(0.95, 1): 12.706, (0.95, 10): 2.228, (0.99, 5): 4.032, (0.99, 30): 2.750,
                 (0.998, 3): 10.215, (0.998, 10): 4.144, (0.999, 1): 636.62,
                 (0.999, 10): 4.587}  # fmt: skip
    for (level, df), t in published.items():
        assert t_quantile(level, df) == pytest.approx(t, rel=2e-4), (level, df)
    assert z_quantile(0.99) == pytest.approx(2.5758, abs=1e-4)
    assert t_quantile(0.99, 10_000) == pytest.approx(z_quantile(0.99), rel=1e-3)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
