"""The model sweep's passages a point, and the ceiling an operator gives."""

from __future__ import annotations

import pytest

from console.analysis.repeat_rule import MODEL_PASSAGES, model_sweep_rule, repeat_rule
from console.errors import ConsoleError


def test_a_model_sweep_reads_six_passages_unless_the_ceiling_is_lower() -> None:
    assert model_sweep_rule(None, None).passages == MODEL_PASSAGES
    # --max-repeat 4: one round of four passages, not a round of six over the ceiling
    low = model_sweep_rule(None, None, 4)
    assert low.passages == 4 and low.max_rounds * low.passages == 4
    assert model_sweep_rule(None, None, 12).passages == MODEL_PASSAGES
    # a fixed repeat reads a fresh passage for every request already
    assert model_sweep_rule(3, None).passages is None
    # a comparison keeps the sample size's two passages (both sides read the same ones)
    assert repeat_rule(None, None).passages == 2


def test_a_repeat_below_one_is_refused_in_one_sentence() -> None:
    with pytest.raises(ConsoleError, match="at least 1"):
        model_sweep_rule(0, None)
