"""SGLang's spec-decode fields (meta_info current, legacy and oldest names; sglext; the
verify-call counter), on fixtures in its real formats (fixtures/spec_fields/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.backends.openai import from_openai_body
from console.backends.sglang import spec_fields
from console.backends.spec_details import SpecDetails
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


@pytest.mark.parametrize(
    ("fixture", "source"),
    [
        ("sglang_generate_current.json", spec_fields.SGLANG_META),
        ("sglang_generate_legacy.json", spec_fields.SGLANG_META_LEGACY),
    ],
)
def test_sglang_meta_info_current_and_legacy_names(fixture: str, source: str) -> None:
    spec = spec_fields.from_sglang_meta(_json(fixture)["meta_info"])
    _check_request(spec, source)
    assert spec is not None
    assert spec.proposed_drafts == 60 and spec.accept_rate == pytest.approx(37 / 60)
    assert spec.histogram == HISTOGRAM
    assert spec.per_position == pytest.approx(POSITIONS)
    assert spec.engine_accept_length == pytest.approx(2.9)  # SGLang's N / steps, kept apart


def test_sglang_oldest_meta_info_has_verify_steps_only() -> None:
    spec = spec_fields.from_sglang_meta(_json("sglang_generate_oldest.json")["meta_info"])
    assert spec is not None and spec.source == spec_fields.SGLANG_META_STEPS
    assert spec.verify_steps == 20 and spec.accepted_drafts is None and spec.commit_len is None


def test_no_speculation_is_no_spec_details() -> None:
    assert spec_fields.from_sglang_meta({"completion_tokens": 5, "spec_verify_ct": 0}) is None
    assert spec_fields.from_sglang_meta({"completion_tokens": 5}) is None
    assert from_openai_body({"choices": [{"text": "x"}], "metrics": None}) is None
    assert from_openai_body({"metrics": {"speculative_decoding": None}}) is None


def test_sglang_openai_sglext_spec_tokens_details() -> None:
    body = _json("sglang_completion_sglext.json")
    spec = from_openai_body(body)
    _check_request(spec, spec_fields.SGLANG_SGLEXT)
    assert spec is not None and spec.histogram == HISTOGRAM
    # a build that puts sglext on the choice instead reads the same
    moved = dict(body)
    ext = moved.pop("sglext")
    moved["choices"] = [{**body["choices"][0], "sglext": ext}]
    assert from_openai_body(moved) == spec


def test_sglang_verify_calls_counter_gives_exact_window_commit() -> None:
    before = _scrape("sglang_metrics_before.txt", 100.0)
    after = _scrape("sglang_metrics_after.txt", 101.0)
    commit, calls = spec_fields.sglang_window_commit(before, after)  # type: ignore[misc]
    assert calls == 20 and commit == pytest.approx(58 / 20)
    assert spec_fields.sglang_window_commit(after, after) is None


# -- the live /metrics path ---------------------------------------------------------------
