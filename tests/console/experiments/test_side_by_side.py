"""Side by side's stopping rule: a point whose paired change is still wide reads on past
the usual ceiling, to the paired one, since every extra pair narrows the change itself."""

from __future__ import annotations

from console.analysis.repeat_rule import repeat_rule
from console.analysis.sample_size import PAIRED_MAX_REPEAT, SampleTarget
from console.experiments.side_by_side import _settled
from tests.console.analysis.test_pairing import requests


def _sides(rounds: int, noise: float) -> tuple[list, list]:
    counts = {"easy": rounds, "hard": rounds}
    return requests(counts, noise=noise, seed=1), requests(counts, noise=noise, seed=2)


def test_a_wide_paired_change_reads_past_the_usual_ceiling_up_to_the_paired_one() -> None:
    target = SampleTarget()  # the default: 3-10 repeats, side by side up to 40
    assert target.max_rounds == 5 and target.paired_max_rounds == PAIRED_MAX_REPEAT // 2
    noisy = _sides(5, noise=0.12)  # 10 pairs at 12% per request: wider than ± 10%
    assert not _settled(noisy, target, 5, rows=4)  # before: stopped here, too wide to tell
    assert _settled(noisy, target, target.paired_max_rounds, rows=4)  # the paired ceiling
    calm = _sides(5, noise=0.005)
    assert _settled(calm, target, 5, rows=4)
    assert _settled(_sides(3, noise=0.005), target, 3, rows=4)  # a calm host stops at 3


def test_a_ceiling_the_operator_gives_is_the_ceiling_side_by_side_too() -> None:
    given = repeat_rule(None, None, 6)
    assert given.paired_max_repeat == 6 and given.paired_max_rounds == given.max_rounds == 3
    assert not _settled(_sides(3, noise=0.12), given, 2, rows=4)
    assert _settled(_sides(3, noise=0.12), given, 3, rows=4)
    default = repeat_rule(None, None, None)
    assert (default.max_repeat, default.paired_max_repeat) == (10, PAIRED_MAX_REPEAT)
    assert SampleTarget.fixed(4).paired_max_rounds == 4  # exactly that many, everywhere


def test_a_noisy_side_by_side_point_says_how_far_it_read_past_the_ceiling() -> None:
    from console.analysis.sample_size import SampleSize

    size = SampleSize(SampleTarget())
    size.rounds, size.rel = {("code", 256): 13}, {("code", 256): 0.11}
    assert "within 10 repeats (side by side up to 26," in (size.message() or "")
    size.rounds = {("code", 256): 5}
    assert "within 10 repeats:" in (size.message() or "")
