"""Measured requests on vLLM's and SGLang's real response and /metrics formats.

Neither engine runs here, so a small HTTP server on loopback answers with their shapes:
vLLM's `/v1/completions` body and a `/metrics` page written by prometheus_client under
vLLM's own metric names (vLLM exposes its metrics with that library), and SGLang's
`/generate` with the `meta_info` fields it returns (with `--enable-metrics`). Also the
arithmetic of the decomposition and verdict on fixed figures.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from console.analysis.decompose import FitError, fit
from console.analysis.records import RequestSample
from console.analysis.stats import summarize
from console.measure.request_measurement import RequestSpec, measure_request
from console.service.engine_client import EngineClient, parse_metrics
from console.transport import LocalTransport

DECODE_S, DRAFTS, ACCEPTED = 0.5, 20, 59  # one request: 80 tokens, 1 + 59/20 ... per step


class FakeEngine:
    """vLLM- and SGLang-shaped answers; counters advance by one request per completion."""

    def __init__(self, n_out: int = 80, finish: str = "length") -> None:
        self.n_out, self.finish = n_out, finish
        self.registry = CollectorRegistry()
        labels = ["engine", "model_name"]
        self.decode = Histogram("vllm:request_decode_time_seconds",
                                "Histogram of time spent in DECODE phase for request.", labels,
                                registry=self.registry)  # fmt: skip
        self.drafts = Counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.",
                              labels, registry=self.registry)  # fmt: skip
        self.accepted = Counter("vllm:spec_decode_num_accepted_tokens",
                                "Number of accepted tokens.", labels,
                                registry=self.registry)  # fmt: skip
        self.generated = Counter("vllm:generation_tokens", "Number of generation tokens processed.",
                                 labels, registry=self.registry)  # fmt: skip
        for metric in (self.decode, self.drafts, self.accepted, self.generated):
            metric.labels("0", "m")  # exposed at zero before the first request, as vLLM does

    def completion(self, body: dict) -> dict:
        self.decode.labels("0", "m").observe(DECODE_S)
        self.drafts.labels("0", "m").inc(DRAFTS)
        self.accepted.labels("0", "m").inc(ACCEPTED)
        self.generated.labels("0", "m").inc(self.n_out)
        return {
            "id": "cmpl-1", "object": "text_completion", "created": 1, "model": body["model"],
            "choices": [{"index": 0, "text": "x" * self.n_out, "logprobs": None,
                         "finish_reason": self.finish, "stop_reason": None,
                         "prompt_logprobs": None}],
            "usage": {"prompt_tokens": len(body["prompt"]), "total_tokens": 0,
                      "completion_tokens": self.n_out, "prompt_tokens_details": None},
        }  # fmt: skip

    def generate(self, body: dict) -> dict:
        n = self.n_out
        return {
            "text": "y" * n, "output_ids": [88] * n,
            "meta_info": {
                "id": "abc", "finish_reason": {"type": self.finish, "length": n},
                "prompt_tokens": len(body["input_ids"]), "completion_tokens": n,
                "cached_tokens": 0, "spec_verify_ct": DRAFTS,
                "spec_accept_length": n / DRAFTS, "spec_accept_rate": 0.6,
                "e2e_latency": 0.7, "decode_throughput": (n - 1) / DECODE_S,
            },
        }  # fmt: skip


@pytest.fixture
def fake() -> Iterator[tuple[FakeEngine, int]]:
    engine = FakeEngine()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, payload: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._send(200, generate_latest(engine.registry), "text/plain; version=0.0.4")
            else:
                self._send(404, b'{"detail": "Not Found"}')

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            route = {"/v1/completions": engine.completion, "/generate": engine.generate}
            if self.path not in route:
                self._send(404, b'{"detail": "Not Found"}')
                return
            self._send(200, json.dumps(route[self.path](body)).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield engine, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


SPEC = RequestSpec("code", "code@32#0", 80, input_ids=tuple(range(32)))


async def test_vllm_completion_takes_decode_time_and_steps_from_metrics_deltas(fake) -> None:
    _engine, port = fake
    client = EngineClient(LocalTransport("vl"), port)
    try:
        first = await measure_request(client, "vllm", SPEC, flags_hash="h", model="m")
        second = await measure_request(client, "vllm", SPEC, flags_hash="h", model="m")
    finally:
        await client.close()
    for s in (first, second):  # deltas, not the lifetime totals
        assert s.endpoint == "/v1/completions" and s.decode_source == "server-metrics"
        assert s.decode_time_s == pytest.approx(DECODE_S)
        assert s.verify_steps == DRAFTS and s.context_tokens == 32
        assert s.commit_len == pytest.approx(79 / DRAFTS)  # = 1 + accepted/drafts for vLLM
        assert s.decode_tok_s == pytest.approx(79 / DECODE_S) and s.ok
    assert client.opened == 1  # one forward and one HTTP client for every request


async def test_sglang_generate_uses_its_decode_throughput(fake) -> None:
    _engine, port = fake
    client = EngineClient(LocalTransport("sg"), port)
    try:
        s = await measure_request(client, "sglang", SPEC, flags_hash="h")
    finally:
        await client.close()
    assert s.endpoint == "/generate" and s.decode_source == "server"
    assert s.decode_time_s == pytest.approx(DECODE_S) and s.verify_steps == DRAFTS
    assert s.step_time_s == pytest.approx(DECODE_S / DRAFTS) and s.ok
    assert s.repetition is not None and s.repetition > 0.9  # "yyyy...": looping output


async def test_a_short_answer_is_flagged_and_left_out_of_the_median(fake) -> None:
    engine, port = fake
    client = EngineClient(LocalTransport("vl"), port)
    try:
        good = await measure_request(client, "vllm", SPEC, flags_hash="h", model="m")
        engine.n_out, engine.finish = 37, "stop"
        short = await measure_request(client, "vllm", SPEC, flags_hash="h", model="m")
    finally:
        await client.close()
    assert short.flagged == "37 of 80 tokens (stopped at EOS or a stop string)"
    [point] = summarize([good, short])
    assert point.n == 1 and point.flagged == 1
    assert point.tok_s.median == pytest.approx(good.decode_tok_s)


def test_metrics_are_parsed_with_prometheus_text_parser() -> None:
    text = generate_latest(FakeEngine().registry).decode()
    scrape = parse_metrics(text)
    assert scrape.total("vllm:spec_decode_num_drafts_total") == 0
    assert scrape.total("vllm:request_decode_time_seconds_sum") == 0
    assert scrape.total("missing") is None


def _sample(ctx: int, kind: str, commit: float, step: float) -> RequestSample:
    n = 65
    return RequestSample(
        engine="builtin", endpoint="/generate", text_type=kind, prompt_id="p",
        context_tokens=ctx, max_tokens=n, ignore_eos=True, streamed=False, flags_hash="h",
        completion_tokens=n, finish_reason="length", latency_s=1.0, ttft_s=None,
        decode_time_s=(n - 1) / commit * step, decode_source="server",
        verify_steps=round((n - 1) / commit), decode_tok_s=commit / step, commit_len=commit,
        step_time_s=step, decode_context=ctx,
    )  # fmt: skip


def test_fit_refuses_thin_sweeps_and_unknown_types() -> None:
    with pytest.raises(FitError, match="one context only"):
        fit([_sample(64, "code", 5, 0.01), _sample(64, "code", 5, 0.01)])
    with pytest.raises(FitError, match="no 'prose' text"):
        fit([_sample(64, "code", 5, 0.01), _sample(512, "code", 5, 0.02)]).predict(100, "prose")


def test_a_text_gives_windows_distinct_passages_then_repeats_them() -> None:
    from console.measure.prompts import WINDOWS, window

    ids = list(range(7 * 7 * 40))
    starts = [window(ids, 16, i)[0] for i in range(WINDOWS + 1)]
    assert len(set(starts[:WINDOWS])) == WINDOWS  # held-out figures rely on this many
    assert starts[WINDOWS] == starts[0]
