"""vLLM's spec-decode fields (per-request block; counters over a window), on fixtures in its
real formats (fixtures/spec_fields/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.backends.openai import from_openai_body
from console.backends.spec_details import SpecDetails
from console.backends.vllm import spec_fields
from console.backends.wire import parse_metrics

FIXTURES = Path(__file__).parents[2] / "fixtures" / "spec_fields"
HISTOGRAM = [3, 5, 4, 8]
POSITIONS = [17 / 20, 12 / 20, 8 / 20]


def _json(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def _scrape(name: str, t: float) -> object:
    return parse_metrics((FIXTURES / name).read_text(), t=t)


def _check_request(spec: SpecDetails | None, source: str) -> None:
    assert spec is not None and spec.source == source
    assert spec.verify_steps == 20 and spec.accepted_drafts == 37
    assert spec.commit_len == pytest.approx(2.85)


def test_vllm_per_request_detailed_block() -> None:
    spec = from_openai_body(_json("vllm_completion_detailed.json"))
    _check_request(spec, spec_fields.VLLM_PER_REQUEST)
    assert spec is not None
    assert spec.proposed_drafts == 60 and spec.histogram == HISTOGRAM
    assert spec.per_step_accepted is not None and len(spec.per_step_accepted) == 20
    assert sum(spec.per_step_accepted) == 37
    assert spec.engine_accept_length == pytest.approx(spec.commit_len)  # vLLM: 1 + acc/steps
    assert spec.per_position == pytest.approx(POSITIONS)
    summary = _json("vllm_completion_detailed.json")
    del summary["metrics"]["speculative_decoding"]["per_step_accepted"]  # `summary` mode
    assert from_openai_body(summary).per_step_accepted is None  # type: ignore[union-attr]


def test_vllm_per_position_counters_over_a_window() -> None:
    before = _scrape("vllm_metrics_before.txt", 100.0)
    after = _scrape("vllm_metrics_after.txt", 101.0)
    assert spec_fields.vllm_position_rates(before, after) == pytest.approx(POSITIONS)
    spec = spec_fields.vllm_request_delta(before, after)
    _check_request(spec, spec_fields.VLLM_METRICS_DELTA)
    assert spec is not None and spec.per_position == pytest.approx(POSITIONS)
    assert spec_fields.vllm_position_rates(after, after) is None  # no drafts in the window
