"""The engines' spec-decode fields through the console's own paths: a measured request
against a server answering with the real-format fixtures (see fixtures/spec_fields/README.md),
and live samples from real-format /metrics pages. Each engine's readers are tested in
tests/console/backends/<kind>/test_spec_fields.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from console.backends import spec_details
from console.backends.sglang import spec_fields as sglang_fields
from console.backends.vllm import spec_fields as vllm_fields
from console.measure.live_samples import sample_from_scrapes
from console.measure.request_measurement import RequestSpec, measure_request
from console.service.engine_client import EngineClient, parse_metrics
from console.transport import LocalTransport

FIXTURES = Path(__file__).parents[1] / "fixtures" / "spec_fields"
HISTOGRAM = [3, 5, 4, 8]
POSITIONS = [17 / 20, 12 / 20, 8 / 20]


def _json(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def _scrape(name: str, t: float) -> object:
    return parse_metrics((FIXTURES / name).read_text(), t=t)


def _check_request(spec: spec_details.SpecDetails | None, source: str) -> None:
    assert spec is not None and spec.source == source
    assert spec.verify_steps == 20 and spec.accepted_drafts == 37
    assert spec.commit_len == pytest.approx(2.85)


def _without_counter(name: str) -> str:
    return "".join(
        line + "\n"
        for line in (FIXTURES / name).read_text().splitlines()
        if "spec_verify_calls" not in line
    )


def test_live_sglang_sample_prefers_the_counter_over_the_gauge() -> None:
    before = _scrape("sglang_metrics_before.txt", 100.0)
    after = _scrape("sglang_metrics_after.txt", 101.0)
    sample = sample_from_scrapes(before, after)
    assert sample is not None and sample.spec_source == sglang_fields.SGLANG_VERIFY_COUNTER
    assert sample.commit_len == pytest.approx(2.9) and sample.tok_s == pytest.approx(114.0)
    # an SGLang without the counter: the last interval's gauge, and it says so
    old_before = parse_metrics(_without_counter("sglang_metrics_before.txt"), t=100.0)
    old_after = parse_metrics(_without_counter("sglang_metrics_after.txt"), t=101.0)
    old = sample_from_scrapes(old_before, old_after)
    assert old is not None and old.spec_source == sglang_fields.SGLANG_GAUGE
    assert old.commit_len == pytest.approx(2.6)


def test_live_sglang_counter_moves_between_gauge_refreshes() -> None:
    # The gauges refresh only at SGLang's decode-log interval; the counter moves anyway.
    before = _scrape("sglang_metrics_before.txt", 100.0)
    after_text = (FIXTURES / "sglang_metrics_after.txt").read_text()
    before_text = (FIXTURES / "sglang_metrics_before.txt").read_text()
    keep = {"sglang:generation_tokens_total", "sglang:spec_verify_calls_total"}
    mixed = "".join(
        (a if any(a.startswith(k) for k in keep) else b) + "\n"
        for a, b in zip(after_text.splitlines(), before_text.splitlines(), strict=True)
    )
    sample = sample_from_scrapes(before, parse_metrics(mixed, t=101.0))
    assert sample is not None and sample.spec_source == sglang_fields.SGLANG_VERIFY_COUNTER
    assert sample.commit_len == pytest.approx(2.9)
    assert sample.tok_s is None and sample.step_time_s is None  # no fresh rate to pair it with


def test_live_vllm_sample_carries_per_position_acceptance() -> None:
    before = _scrape("vllm_metrics_before.txt", 100.0)
    after = _scrape("vllm_metrics_after.txt", 101.0)
    sample = sample_from_scrapes(before, after)
    assert sample is not None and sample.spec_source == vllm_fields.VLLM_COUNTERS
    assert sample.commit_len == pytest.approx(2.85)
    assert sample.per_position == pytest.approx(POSITIONS)


# -- measured requests --------------------------------------------------------------------


SPEC = RequestSpec("code", "code@32#0", 58, input_ids=tuple(range(32)))


@pytest.fixture
def served() -> Iterator[tuple[dict[str, object], int]]:
    """Answers /generate and /v1/completions with whichever fixture the test sets, and
    /metrics with the before page, then the after page."""
    state: dict[str, object] = {"generate": None, "completion": None, "scrapes": 0, "lag": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, payload: bytes, ctype: str = "application/json") -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            n = int(state["scrapes"])  # type: ignore[call-overload]
            state["scrapes"] = n + 1
            # `lag` scrapes after the first still read the before page: counters the
            # engine had not yet recorded
            lag = int(state["lag"])  # type: ignore[call-overload]
            before = n <= lag if lag else n % 2 == 0
            page = "vllm_metrics_before.txt" if before else "vllm_metrics_after.txt"
            self._send((FIXTURES / page).read_bytes(), "text/plain; version=0.0.4")

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            key = "generate" if self.path == "/generate" else "completion"
            self._send(json.dumps(state[key]).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


async def test_measured_sglang_request_records_its_spec_details(served) -> None:
    state, port = served
    state["generate"] = _json("sglang_generate_current.json")
    client = EngineClient(LocalTransport("sg"), port)
    try:
        sample = await measure_request(client, "sglang", SPEC, flags_hash="h")
    finally:
        await client.close()
    assert sample.spec_source == sglang_fields.SGLANG_META and sample.verify_steps == 20
    assert sample.spec is not None and sample.spec["histogram"] == HISTOGRAM
    assert sample.spec["commit_len"] == pytest.approx(2.85)


@pytest.mark.parametrize(
    ("fixture", "source"),
    [
        ("vllm_completion_detailed.json", vllm_fields.VLLM_PER_REQUEST),
        ("sglang_completion_sglext.json", sglang_fields.SGLANG_SGLEXT),
    ],
)
async def test_measured_completion_prefers_the_per_request_block(served, fixture, source) -> None:
    state, port = served
    state["completion"] = _json(fixture)
    client = EngineClient(LocalTransport("vl"), port)
    try:
        sample = await measure_request(client, "vllm", SPEC, flags_hash="h", model="m")
    finally:
        await client.close()
    assert sample.spec_source == source and sample.verify_steps == 20
    assert sample.spec is not None and sample.spec["per_position"] == pytest.approx(POSITIONS)


async def test_measured_completion_without_the_block_uses_counter_deltas(served) -> None:
    state, port = served
    body = _json("vllm_completion_detailed.json")
    del body["metrics"]  # a vLLM started without --per-request-spec-decode-metrics
    state["completion"] = body
    client = EngineClient(LocalTransport("vl"), port)
    try:
        sample = await measure_request(client, "vllm", SPEC, flags_hash="h", model="m")
    finally:
        await client.close()
    assert sample.spec_source == vllm_fields.VLLM_METRICS_DELTA and sample.verify_steps == 20
    assert sample.spec is not None and sample.spec["histogram"] is None
    assert sample.spec["per_position"] == pytest.approx(POSITIONS)


@pytest.mark.parametrize("lag", [1, 3, 99])
async def test_counters_recorded_after_the_reply_are_scraped_again(served, lag) -> None:
    # vLLM records a step's counters after the reply leaves: the first scrapes after it
    # can read the before page. The request's figures wait for the counters to count
    # its 58 tokens; counters that never do flag the request instead of undercounting.
    state, port = served
    body = _json("vllm_completion_detailed.json")
    del body["metrics"]
    state["completion"], state["lag"] = body, lag
    client = EngineClient(LocalTransport("vl"), port)
    try:
        sample = await measure_request(client, "vllm", SPEC, flags_hash="h", model="m")
    finally:
        await client.close()
    if lag < 99:  # (the fixture's page has no decode-time histogram: flagged for that)
        assert sample.verify_steps == 20 and sample.spec_source == vllm_fields.VLLM_METRICS_DELTA
        assert state["scrapes"] == 2 + lag and "counters" not in (sample.flagged or "")
    else:
        assert sample.flagged == "the engine's counters never counted all of its tokens"
