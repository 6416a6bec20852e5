"""Repeats by noise: a quiet point stops at the minimum, a noisy one runs to the cap and
says so in one sentence, and every round visits the open points in turn."""

from __future__ import annotations

import dataclasses
import random

import pytest

from console.analysis.sample_size import SampleTarget, measure_until_narrow
from tests.console.analysis.test_intervals import BASE


def _measurer(spread: dict[str, float], seed: int = 1):
    rng = random.Random(seed)
    calls: list[tuple[str, int]] = []

    async def measure(point: tuple[str, int], index: int):
        calls.append((point[0], index))
        jitter = rng.uniform(1 - spread[point[0]], 1 + spread[point[0]])
        return dataclasses.replace(
            BASE, text_type=point[0], context_tokens=point[1], prompt_id=f"{point[0]}#{index}",
            decode_time_s=0.1 * jitter,
        )  # fmt: skip

    return measure, calls


async def test_a_quiet_point_stops_early_and_a_noisy_one_runs_to_the_cap() -> None:
    measure, calls = _measurer({"quiet": 0.005, "noisy": 0.6})
    target = SampleTarget(target_rel=0.05, max_repeat=6, min_repeat=3)
    size = await measure_until_narrow([("quiet", 64), ("noisy", 64)], measure, target)
    # whole rounds of both passages: 3 requests at least is 2 rounds, 6 at most is 3
    assert size.rounds == {("quiet", 64): 2, ("noisy", 64): 3}
    # round-robin while both are open: never all repeats of one point in a row
    assert calls[:8] == [("quiet", 0), ("noisy", 0), ("quiet", 1), ("noisy", 1),
                         ("quiet", 2), ("noisy", 2), ("quiet", 3), ("noisy", 3)]  # fmt: skip
    assert calls[8:] == [("noisy", 4), ("noisy", 5)]
    assert size.rel[("quiet", 64)] <= 0.05 < size.rel[("noisy", 64)]
    assert not size.reached
    message = size.message()
    assert message is not None and message.count(". ") == 0 and message.endswith(").")
    assert "too noisy to reach ± 5% on tok/s within 6 repeats" in message
    assert "noisy at context 64" in message
    data = size.as_dict()
    assert data["reached"] is False and data["message"] == message
    assert {p["text_type"]: p["rounds"] for p in data["points"]} == {"quiet": 2, "noisy": 3}


async def test_fixed_repeats_ignore_the_intervals_and_prior_requests_count() -> None:
    measure, calls = _measurer({"a": 0.6})
    size = await measure_until_narrow([("a", 64)], measure, SampleTarget.fixed(2))
    assert size.rounds == {("a", 64): 2} and size.reached and size.message() is None
    # a second block of the same condition reads new passages and counts the first
    measure, calls = _measurer({"a": 0.001})
    prior = [dataclasses.replace(BASE, text_type="a", context_tokens=64)] * 3
    size = await measure_until_narrow(
        [("a", 64)], measure, SampleTarget(min_repeat=1, max_repeat=5), prior=prior,
        first_index=4,
    )  # fmt: skip
    assert calls == [("a", 4), ("a", 5)] and size.reached  # one whole round: both passages


def test_a_target_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="minimum <= maximum"):
        SampleTarget(min_repeat=5, max_repeat=2)
    with pytest.raises(ValueError, match="0 or more"):
        SampleTarget(target_rel=-0.1)


async def test_the_after_side_reads_exactly_the_rounds_the_before_side_read() -> None:
    measure, calls = _measurer({"quiet": 0.005, "noisy": 0.6})
    before = await measure_until_narrow(
        [("quiet", 64), ("noisy", 64)], measure, SampleTarget(max_repeat=6)
    )
    measure, after_calls = _measurer({"quiet": 0.6, "noisy": 0.005}, seed=2)  # noise swapped
    after = await measure_until_narrow(
        [("quiet", 64), ("noisy", 64)], measure, SampleTarget(max_repeat=6), rounds=before.rounds
    )
    assert after.rounds == before.rounds == {("quiet", 64): 2, ("noisy", 64): 3}
    # the same passages the same number of times on both sides
    assert sorted(after_calls) == sorted(calls)


def test_a_paired_change_wider_than_its_sides_keeps_a_side_by_side_point_open() -> None:
    # Two passages read in 3 rounds on each side at 8% per-request timing noise: each
    # side's own tok/s interval may meet ± 5%, but their paired change over 6 pairs,
    # judged with 3 other rows, is ± 15% or more. Ten more rounds each narrow it.
    from console.analysis.sample_size import paired_narrow_enough
    from tests.console.analysis.test_pairing import requests

    few_a = requests({"easy": 3, "hard": 3}, noise=0.08, seed=1)
    few_b = requests({"easy": 3, "hard": 3}, noise=0.08, seed=2)
    assert not paired_narrow_enough(few_a, few_b, rows=4)
    many_a = requests({"easy": 13, "hard": 13}, noise=0.08, seed=1)
    many_b = requests({"easy": 13, "hard": 13}, noise=0.08, seed=2)
    assert paired_narrow_enough(many_a, many_b, rows=4)
    quiet_a = requests({"easy": 3, "hard": 3}, noise=0.005, seed=1)
    quiet_b = requests({"easy": 3, "hard": 3}, noise=0.005, seed=2)
    assert paired_narrow_enough(quiet_a, quiet_b, rows=4)  # a calm host stops at 3
