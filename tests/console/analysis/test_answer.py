"""The one reading of a change's interval that every answer uses."""

from __future__ import annotations

import pytest

from console.analysis.answer import answer, changed
from console.analysis.intervals import Interval


@pytest.mark.parametrize(
    ("decision", "shown", "expected"),
    [
        ((1.25, 1.12, 1.40), None, "not physics"),  # excludes no change, past 10%
        ((1.05, 1.02, 1.08), None, "physics"),  # real, but under the 10% worth a hunt
        ((1.00, 0.80, 1.24), (1.00, 0.88, 1.14), "physics"),  # decision wide, 95% within
        ((1.00, 0.80, 1.24), (1.00, 0.84, 1.19), "not enough evidence"),  # 95% reaches 19%
        ((0.88, 0.80, 0.97), None, "not physics"),  # -12%, faster counts the same
        ((1.08, 1.01, 1.16), None, "not enough evidence"),  # far end past 15%
    ],
)
def test_one_reading_of_each_answer(
    decision: tuple[float, float, float], shown: tuple[float, float, float] | None, expected: str
) -> None:
    wide = Interval(*shown) if shown is not None else None
    assert answer(Interval(*decision), wide) == expected


def test_a_commit_change_is_read_at_its_own_threshold() -> None:
    assert changed(Interval(1.15, 1.15, 1.15)) and not changed(Interval(1.15, 1.15, 1.15), 0.2)
