"""Pooled figures and their intervals: the arithmetic every comparison rests on."""

from __future__ import annotations

import dataclasses

import pytest

from console.analysis.intervals import change, pool, pooled_figures, usable
from console.analysis.records import RequestSample

BASE = RequestSample(
    engine="builtin", endpoint="/generate", text_type="code", prompt_id="p", context_tokens=256,
    max_tokens=65, ignore_eos=True, streamed=False, flags_hash="h", completion_tokens=65,
    finish_reason="length", latency_s=0.1, ttft_s=None, decode_time_s=0.1,
    decode_source="server", verify_steps=16, decode_tok_s=640.0, commit_len=4.0,
    step_time_s=0.1 / 16,
)  # fmt: skip


def sample(steps: int, seconds: float, **kw) -> RequestSample:
    return dataclasses.replace(BASE, verify_steps=steps, decode_time_s=seconds, **kw)


def test_pooled_tok_s_is_commit_over_step_exactly_where_medians_are_not():
    # A round that commits more takes longer: medians of each column disagree with tok/s.
    group = [sample(16, 0.10), sample(32, 0.12), sample(8, 0.09)]
    p = pool(group)
    assert p.tok_s == pytest.approx(p.commit / p.step_s, rel=1e-12)
    assert p.commit == pytest.approx(192 / 56) and p.step_s == pytest.approx(0.31 / 56)
    figures = pooled_figures(group)
    assert figures is not None and figures.n == 3
    assert figures.tok_s.value == pytest.approx(figures.commit.value / figures.step_s.value)
    for iv in (figures.tok_s, figures.commit, figures.step_s):
        assert iv.low <= iv.value <= iv.high


def test_flagged_and_stepless_samples_are_left_out():
    group = [sample(16, 0.1), sample(16, 0.1, flagged="short"), sample(0, 0.1)]
    assert len(usable(group)) == 1
    assert pooled_figures([sample(16, 0.1, flagged="x")]) is None


def test_an_unchanged_engine_is_within_noise_and_a_real_change_is_a_finding():
    noisy = [sample(16, t) for t in (0.09, 0.1, 0.11, 0.1, 0.095, 0.105)]
    same = change(noisy, list(reversed(noisy)), lambda p: p.tok_s)
    assert same.within_noise and same.text().startswith("within noise (+0% ± ")
    slower = change(noisy, [sample(16, t * 1.5) for t in (0.09, 0.1, 0.11, 0.1)],
                    lambda p: p.tok_s)  # fmt: skip
    assert not slower.within_noise
    assert slower.percent == pytest.approx(-33.3, abs=0.5)
    assert slower.ratio.high < 1.0 and slower.text().startswith("-33% [")


def test_intervals_are_seeded_and_narrow_with_more_requests():
    few = [sample(16, t) for t in (0.08, 0.12, 0.1)]
    many = few * 10
    a, b = pooled_figures(few, seed=3), pooled_figures(few, seed=3)
    assert a == b
    assert pooled_figures(many).tok_s.rel_half_width < a.tok_s.rel_half_width


def test_repeats_of_the_same_passages_give_a_timing_interval_and_a_paired_change():
    # Two passages that commit differently (16 and 24 steps for 64 tokens), each read four
    # times with 1% timing jitter: over these passages tok/s is known to about 1%; counted
    # as eight different passages the commit spread would dominate the interval.
    times = (0.099, 0.101, 0.1, 0.1005)
    reads = [sample(st, t * st / 16, prompt_id=f"p{st}") for st in (16, 24) for t in times]
    fresh = [dataclasses.replace(s, prompt_id=f"q{i}") for i, s in enumerate(reads)]
    within = pooled_figures(reads).tok_s.rel_half_width
    assert within < 0.01 < pooled_figures(fresh).tok_s.rel_half_width
    assert pooled_figures(reads).commit.low == pooled_figures(reads).commit.high  # greedy
    # the same passages 10% slower after a change: a finding, and only that
    slower = [dataclasses.replace(s, decode_time_s=s.decode_time_s * 1.1) for s in reads]
    moved = change(reads, slower, lambda p: p.tok_s)
    assert moved.finding and moved.ratio.high < 0.93 and moved.text().startswith("-9% [")


def test_a_lopsided_interval_within_noise_reads_a_span_that_includes_no_change() -> None:
    # -35% with an interval even on the log scale, [0.39, 1.01]: its half-width is 31
    # points, and "-35% ± 31%" would read as a slowdown of 4% at least.
    from console.analysis.intervals import ChangeInterval, Interval

    lopsided = ChangeInterval(Interval(0.65, 0.39, 1.01), 6, 6)
    assert lopsided.within_noise and lopsided.text() == "within noise (-35% ± 36%)"
