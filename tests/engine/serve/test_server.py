"""End-to-end: the real `specengine serve` process on the tiny random pair, started once."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.engine.serve._server_harness import (
    READY,
    SGLANG_DECODE_RE,
    TIMESTAMP_RE,
    sse_events,
    stream,
)

pytestmark = pytest.mark.timeout(300)

PROMPT = "def fib(n):\n    "
LOG_INTERVAL = 4


# How the shared `server` fixture (conftest.py) starts this module's server.
SERVER_FLAGS = (
    "--decode-log-interval",
    str(LOG_INTERVAL),
    "--served-model-name",
    "tiny",
    "--reasoning-parser",
    "qwen3",
    "--tool-call-parser",
    "qwen25",
)


@pytest.fixture(scope="module")
def client(server):
    with server.client() as c:
        yield c


def completion(client, **body):
    body = {
        "model": "tiny",
        "prompt": PROMPT,
        "max_tokens": 24,
        "temperature": 0,
        "ignore_eos": True,
        **body,
    }
    r = client.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_startup_logs_sglang_format(server):
    log = server.log()
    assert re.search(r"Loading safetensors checkpoint shards: +\d+% Completed \| \d+/\d+", log)
    ready = [ln for ln in log.splitlines() if READY in ln]
    assert len(ready) == 1 and re.match(TIMESTAMP_RE, ready[0])
    # Ready is announced only once the socket is listening: health answers right away.
    with httpx.Client(base_url=server.base, timeout=10) as c:
        assert c.get("/health").status_code == 200


def test_completion_non_stream(client):
    body = completion(client, max_tokens=16)
    assert body["object"] == "text_completion"
    assert body["model"] == "tiny"
    choice = body["choices"][0]
    assert isinstance(choice["text"], str)
    assert choice["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 16
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + 16


def test_ignore_eos_gives_exactly_max_tokens(client):
    for n in (1, 7, 33):
        r = client.post(
            "/generate",
            json={
                "text": PROMPT,
                "sampling_params": {"max_new_tokens": n, "ignore_eos": True, "temperature": 0},
            },
        )
        assert r.status_code == 200, r.text
        meta = r.json()["meta_info"]
        assert meta["completion_tokens"] == n
        assert len(r.json()["output_ids"]) == n
        assert meta["finish_reason"] == {"type": "length", "length": n}


def test_stream_matches_non_stream(client):
    full = completion(client)
    events = stream(
        client,
        "/v1/completions",
        {
            "model": "tiny",
            "prompt": PROMPT,
            "max_tokens": 24,
            "temperature": 0,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert events[-1] == "[DONE]"
    chunks = [e for e in events[:-1] if e["choices"]]
    text = "".join(e["choices"][0]["text"] for e in chunks)
    assert text == full["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"] == full["usage"]


def test_chat_stream_matches_non_stream(client):
    body = {
        "model": "tiny",
        "messages": [
            {"role": "system", "content": "Python."},
            {"role": "user", "content": "def add(a, b):"},
        ],
        "max_completion_tokens": 20,
        "temperature": 0,
        "ignore_eos": True,
    }
    r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    full = r.json()
    assert full["object"] == "chat.completion"
    msg = full["choices"][0]["message"]
    assert msg["role"] == "assistant" and "reasoning_content" in msg
    events = stream(
        client,
        "/v1/chat/completions",
        {**body, "stream": True, "stream_options": {"include_usage": True}},
    )
    assert events[-1] == "[DONE]"
    deltas = [e["choices"][0]["delta"] for e in events[:-1] if e["choices"]]
    assert deltas[0].get("role") == "assistant"
    content = "".join(d.get("content") or "" for d in deltas)
    reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
    assert content == (msg["content"] or "")
    assert reasoning == (msg["reasoning_content"] or "")
    assert events[-2]["usage"] == full["usage"]
    assert full["usage"]["completion_tokens"] == 20


def test_generate_meta_info_consistent(client):
    r = client.post(
        "/generate",
        json={
            "text": PROMPT,
            "sampling_params": {"max_new_tokens": 40, "ignore_eos": True, "temperature": 0},
            "return_commit_lengths": True,
        },
    )
    assert r.status_code == 200, r.text
    meta = r.json()["meta_info"]
    n, s = meta["completion_tokens"], meta["spec_verify_ct"]
    assert n == 40 and s >= 1
    assert meta["spec_accept_length"] == pytest.approx(n / s, rel=1e-6)
    lengths = meta["commit_lengths"]
    assert len(lengths) == s and all(x >= 1 for x in lengths)
    # Every token after the prefill's first comes from a round (the last may be cut).
    assert sum(lengths) >= n - 1 >= sum(lengths[:-1])
    for key in ("prompt_tokens", "e2e_latency", "ttft", "decode_time", "prefill_time"):
        assert meta[key] is not None
    assert meta["ttft"] <= meta["e2e_latency"]
    assert meta["decode_time"] <= meta["e2e_latency"]


def test_generate_input_ids_and_stream(client):
    ids = client.post("/tokenize", json={"prompt": PROMPT}).json()
    assert ids["count"] == len(ids["tokens"]) > 0
    base = {
        "input_ids": ids["tokens"],
        "sampling_params": {"max_new_tokens": 12, "ignore_eos": True, "temperature": 0},
    }
    full = client.post("/generate", json=base).json()
    events = stream(client, "/generate", {**base, "stream": True})
    assert events[-1] == "[DONE]"
    last = events[-2]
    assert last["text"] == full["text"]
    assert last["meta_info"]["completion_tokens"] == 12
    counts = [e["meta_info"]["completion_tokens"] for e in events[:-1]]
    assert counts == sorted(counts)  # cumulative, SGLang-style
    texts = [e["text"] for e in events[:-1]]
    assert all(full["text"].startswith(t) for t in texts)


def test_chat_meta_info_on_request(client):
    r = client.post(
        "/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": "x = 1"}],
            "max_tokens": 8,
            "ignore_eos": True,
            "return_meta_info": True,
        },
    )
    assert r.status_code == 200, r.text
    meta = r.json()["choices"][0]["meta_info"]
    assert meta["completion_tokens"] == 8
    assert meta["spec_accept_length"] == pytest.approx(8 / meta["spec_verify_ct"])


def test_stop_string_cuts_text(client):
    full = completion(client, max_tokens=30)["choices"][0]["text"]
    # Pick a stop string that occurs in the (random) greedy output, past its first chars.
    stop = next(
        (
            full[i : i + 2]
            for i in range(3, len(full) - 2)
            if full[i : i + 2].strip() and "\ufffd" not in full[i : i + 2]
        ),
        None,
    )
    if stop is None:
        pytest.skip("greedy output too short to pick a stop string")
    cut = full[: full.index(stop)]
    body = completion(client, max_tokens=30, stop=[stop])
    choice = body["choices"][0]
    assert choice["text"] == cut
    assert choice["finish_reason"] == "stop" and choice["matched_stop"] == stop
    events = stream(
        client,
        "/v1/completions",
        {"prompt": PROMPT, "max_tokens": 30, "ignore_eos": True, "stop": stop, "stream": True},
    )
    assert "".join(e["choices"][0]["text"] for e in events[:-1]) == cut


def test_models_and_server_info(client):
    models = client.get("/v1/models").json()
    card = models["data"][0]
    assert card["id"] == "tiny" and card["max_model_len"] > 0
    info = client.get("/get_server_info").json()
    for key in (
        "model_path",
        "speculative_algorithm",
        "speculative_draft_model_path",
        "speculative_num_draft_tokens",
        "speculative_ddtree_budget",
        "speculative_draft_window_size",
        "context_length",
        "reasoning_parser",
        "tool_call_parser",
        "host",
        "port",
        "api_key",
        "served_model_name",
        "decode_log_interval",
        "device",
        "dtype",
        "version",
    ):
        assert key in info, key
    assert info["speculative_algorithm"] == "DDTREE"
    assert info["speculative_num_draft_tokens"] >= 2
    state = info["internal_states"][0]
    assert "last_gen_throughput" in state and state["avg_spec_accept_length"] >= 1.0
    assert info["context_length"] == card["max_model_len"]


def test_kv_cache_size_in_server_info(client):
    info = client.get("/get_server_info").json()
    assert info["kv_cache_tokens"] == 0 and info["kv_cache_bytes"] == 0  # idle: no cache
    assert info["kv_cache_max_tokens"] == info["context_length"]
    assert info["kv_cache_max_bytes"] > 0 and info["kv_cache_chunk_tokens"] >= 1
    completion(client, max_tokens=8)
    last = client.get("/get_server_info").json()["kv_cache_last_request_bytes"]
    # A short request grows its caches to a chunk or so, far from the full context.
    assert 0 < last < info["kv_cache_max_bytes"]


def test_decode_log_lines_parse(server, client):
    completion(client, max_tokens=3 * LOG_INTERVAL)
    capacity = client.get("/get_server_info").json()["max_total_num_tokens"]
    lines = [ln for ln in server.log().splitlines() if "Decode batch" in ln]
    assert lines
    for ln in lines:
        assert re.match(TIMESTAMP_RE, ln), ln
        m = re.search(SGLANG_DECODE_RE, ln)
        assert m, ln
        running, tokens, usage, accept, rate, tput, queue = m.groups()
        assert int(running) == 1 and int(tokens) > 0
        # SGLang's token usage: of the whole KV pool (context x running-request limit)
        assert abs(float(usage) - int(tokens) / capacity) <= 0.005
        assert accept is not None and float(accept) >= 1.0 and 0 < float(rate) <= 1
        assert float(tput) > 0 and int(queue) >= 0


def test_metrics_parse(client):
    before = _metrics(client)
    completion(client, max_tokens=2 * LOG_INTERVAL + 1)
    after = _metrics(client)
    for name in (
        "sglang:gen_throughput",
        "sglang:spec_accept_length",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:num_used_tokens",
    ):
        assert name in after, name
    steps = (
        after["specengine:spec_verify_steps_total"] - before["specengine:spec_verify_steps_total"]
    )
    committed = (
        after["specengine:spec_committed_tokens_total"]
        - before["specengine:spec_committed_tokens_total"]
    )
    assert steps >= 1 and committed >= steps  # windowed accept length >= 1
    assert after["sglang:spec_accept_length"] >= 1.0
    assert after["sglang:num_running_reqs"] == 0
    assert (
        after["specengine:step_time_seconds_count"] > before["specengine:step_time_seconds_count"]
    )
    assert after["sglang:time_to_first_token_seconds_count"] >= 1
    assert (
        after["sglang:generation_tokens_total"] - before["sglang:generation_tokens_total"]
        == 2 * LOG_INTERVAL + 1
    )


def _metrics(client) -> dict[str, float]:
    r = client.get("/metrics")
    assert r.status_code == 200
    out = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                continue
            out[sample.name] = sample.value
    return out


async def test_eight_concurrent_clients(server, client):
    expected = completion(client, max_tokens=10)["choices"][0]["text"]

    async def one(i: int):
        async with httpx.AsyncClient(base_url=server.base, timeout=120) as c:
            if i % 2:
                r = await c.post(
                    "/v1/completions", json={"prompt": PROMPT, "max_tokens": 10, "ignore_eos": True}
                )
                assert r.status_code == 200, r.text
                return r.json()["choices"][0]["text"]
            async with c.stream(
                "POST",
                "/v1/completions",
                json={"prompt": PROMPT, "max_tokens": 10, "ignore_eos": True, "stream": True},
            ) as r:
                assert r.status_code == 200
                events = sse_events([ln async for ln in r.aiter_lines()])
            return "".join(e["choices"][0]["text"] for e in events[:-1])

    texts = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(8))), 240)
    assert texts == [expected] * 8


def test_client_disconnect_cancels(server, client):
    aborted = _metrics(client).get("sglang:num_aborted_requests_total", 0)
    with (
        httpx.Client(base_url=server.base, timeout=60) as c,
        c.stream(
            "POST",
            "/v1/completions",
            json={"prompt": PROMPT, "max_tokens": 400, "ignore_eos": True, "stream": True},
        ) as r,
    ):
        for line in r.iter_lines():
            if line.startswith("data:"):
                break  # hang up after the first chunk
    # The engine notices between rounds; poll (bounded) instead of timing anything.
    for _ in range(300):
        if _metrics(client).get("sglang:num_aborted_requests_total", 0) > aborted:
            break
        asyncio.run(asyncio.sleep(0.05))
    assert _metrics(client)["sglang:num_aborted_requests_total"] == aborted + 1
    # ...and the server keeps serving.
    assert completion(client, max_tokens=4)["usage"]["completion_tokens"] == 4


def test_health_generate_and_tokenize(client):
    assert client.get("/health_generate").status_code == 200
    r = client.post("/tokenize", json={"prompt": "abc"})
    assert r.json()["count"] == 3
    assert client.post("/detokenize", json={"tokens": r.json()["tokens"]}).json()["text"] == "abc"
