"""The coverage score (`bench coverage`'s arithmetic) on synthetic passage populations.

The populations are `test_passage_spread`'s: every text type's passages differ by 3x in
commit, timing noise is 4% a request, step time is linear in context. A sweep reads six
passages a point; the held-out figures read others. An honest 95% band holds about 95%
of them; a band of timing noise only holds far fewer, which is the error the verdict made
before passages were a random effect."""

from __future__ import annotations

import math
import random

import pytest

from console.analysis.coverage import judge_share, score, wilson
from console.experiments.coverage_bench import held_out_windows
from console.measure.prompts import WINDOWS
from console.measure.session import MeasureError
from tests.console.analysis.test_passage_spread import population_sweep, reads

PROMPTS = (256, 1000, 1800)


def _held_out(first: int, n: int, seed: int, slower: float = 1.0):
    rng = random.Random(seed)
    out = []
    for p in PROMPTS:
        for k in ("code", "prose"):
            for i in range(first, first + n):
                s = reads(k, p, i, 1, rng)[0]
                out.append(s if slower == 1.0 else _slowed(s, slower))
    return out


def _slowed(s, factor: float):
    from dataclasses import replace

    decode = s.decode_time_s * factor
    return replace(s, decode_time_s=decode, decode_tok_s=(s.completion_tokens - 1) / decode,
                   step_time_s=s.step_time_s * factor)  # fmt: skip


def test_wilson_is_the_score_interval_and_honest_at_the_ends() -> None:
    lo, hi = wilson(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-3)
    lo, hi = wilson(19, 20)
    assert lo == pytest.approx(0.7639, abs=1e-3) and hi == pytest.approx(0.9911, abs=1e-3)
    lo, hi = wilson(500, 1000)  # where the normal interval is right
    half = 1.96 * math.sqrt(0.25 / 1000)
    assert (lo, hi) == pytest.approx((0.5 - half, 0.5 + half), abs=2e-3)


def test_judge_reads_the_wilson_interval_against_92_to_98() -> None:
    assert judge_share(95, 100) == "ok"
    assert judge_share(75, 100) == "under"  # the interval lies wholly below 92%
    assert judge_share(1000, 1000) == "over"  # wholly above 98%: too wide
    assert judge_share(19, 20) == "ok"  # 20 requests cannot tell 95% from 92%
    assert judge_share(0, 0) == "-"


def test_held_out_bands_hold_about_95_percent_and_timing_only_bands_do_not() -> None:
    inside = timing = n = 0
    for seed in range(6):
        first = 6 * seed
        sweep = population_sweep(prompts=PROMPTS, passages=range(first, first + 6),
                                 reads_each=2, seed=seed)  # fmt: skip
        held = _held_out(1000 + 40 * seed, 20, seed=50 + seed)
        points = score(sweep.fitted, held, seed=seed, verdict=False)
        assert {(p.text_type, p.prompt) for p in points} == {
            (k, p) for k in ("code", "prose") for p in PROMPTS}  # fmt: skip
        assert all(p.n == 20 for p in points)
        inside += sum(p.inside for p in points)
        timing += sum(p.timing_inside for p in points)
        n += sum(p.n for p in points)
    assert 0.90 <= inside / n <= 0.99, inside / n
    assert timing / n < 0.6, timing / n  # 4% timing noise against a 3x passage spread


def test_the_paired_reread_holds_no_change_and_misses_a_slower_engine() -> None:
    sweep = population_sweep(prompts=PROMPTS, passages=range(6), reads_each=2, seed=3)
    held = _held_out(600, 5, seed=4)
    same = population_sweep(prompts=PROMPTS, passages=range(6), reads_each=1, seed=9)
    points = score(sweep.fitted, held, same.fitted, seed=0, verdict=False)
    assert all(p.paired is not None and p.paired.holds for p in points)
    assert all(p.paired.pairs == 6 for p in points)
    slower = [_slowed(s, 1.2) for s in same.fitted]
    points = score(sweep.fitted, held, slower, seed=0, verdict=False)
    assert not any(p.paired.holds for p in points)
    assert all(p.paired.ratio.high < 1.0 for p in points)


def test_the_verdicts_own_intervals_hold_about_95_percent_of_held_out_figures() -> None:
    # What `bench coverage` scores: each held-out figure typed into the verdict against
    # the model, as `diagnose --observed` reads it (one request, the operator's passage).
    holds = []
    for seed in range(2):
        sweep = population_sweep(prompts=PROMPTS, passages=range(6 * seed, 6 * seed + 6),
                                 reads_each=2, seed=seed)  # fmt: skip
        points = score(sweep.fitted, _held_out(2000 + 40 * seed, 10, seed=70 + seed), seed=0)
        holds += [h for p in points for h in p.verdict_holds]
    assert None not in holds  # every figure got an interval
    share = sum(holds) / len(holds)
    assert 0.88 <= share <= 0.995, share


def test_intervals_too_narrow_for_their_figures_are_told_under() -> None:
    # The same engine, but every held-out figure a third slower than the sweep's: the
    # verdict's intervals and the bands miss most of them, and the pooled line says so.
    sweep = population_sweep(prompts=PROMPTS, passages=range(6), reads_each=2, seed=1)
    points = score(sweep.fitted, _held_out(300, 5, seed=2, slower=1.5), seed=0)
    inside, n = sum(p.inside for p in points), sum(p.n for p in points)
    assert judge_share(inside, n) == "under"
    v_inside, v_n = sum(p.verdict_inside for p in points), sum(p.verdict_n for p in points)
    assert v_n == n and judge_share(v_inside, v_n) == "under"


def test_held_out_windows_never_read_the_sweeps_passages() -> None:
    windows = held_out_windows(20)
    assert windows == list(range(6, 26))
    assert len(set(windows)) == 20
    with pytest.raises(MeasureError, match="has 43 passages"):
        held_out_windows(WINDOWS)
    with pytest.raises(MeasureError, match="at least one"):
        held_out_windows(0)


def test_the_command_defaults_to_a_4_context_2_type_sweep_and_20_held_out() -> None:
    from console.cli import build_parser

    args = build_parser().parse_args(["bench", "coverage"])
    assert (args.host, args.contexts, args.text, args.held_out) == (
        "local", [256, 768, 1280, 1800], ["code", "prose"], 20)  # fmt: skip
    assert not args.no_calibrate and not args.no_reread
    args = build_parser().parse_args(["bench", "coverage", "gpu1", "--contexts", "1k,2k"])
    assert (args.host, args.contexts) == ("gpu1", [1000, 2000])
