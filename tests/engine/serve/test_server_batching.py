"""A real `specengine serve` batching: concurrent requests give the texts sequential ones
give, at most --max-running-requests run at once (the rest queue), /metrics shows them."""

from __future__ import annotations

import asyncio

import httpx
from prometheus_client.parser import text_string_to_metric_families

SERVER_FLAGS = (
    "--served-model-name",
    "tiny",
    "--skip-server-warmup",
    "--max-running-requests",
    "2",
)
PROMPTS = ["def f(x):\n", "import os\n", "class A:\n", "x = [", "for i in"]


def gauges(client) -> dict[str, float]:
    text = client.get("/metrics").text
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}


def body(prompt: str) -> dict:
    return {"model": "tiny", "prompt": prompt, "max_tokens": 120, "ignore_eos": True}


async def test_concurrent_equals_sequential_and_queues_past_the_limit(server):
    with server.client() as c:
        assert c.get("/get_server_info").json()["max_running_requests"] == 2
        alone = [
            c.post("/v1/completions", json=body(p)).json()["choices"][0]["text"] for p in PROMPTS
        ]
    seen: list[tuple[float, float]] = []

    async def watch(ac: httpx.AsyncClient, done: asyncio.Event):
        while not done.is_set():
            text = (await ac.get("/metrics")).text
            g = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
            seen.append((g["sglang:num_running_reqs"], g["sglang:num_queue_reqs"]))
            await asyncio.sleep(0.01)

    async with httpx.AsyncClient(base_url=server.base, timeout=120) as ac:
        done = asyncio.Event()
        watcher = asyncio.create_task(watch(ac, done))
        rs = await asyncio.gather(*(ac.post("/v1/completions", json=body(p)) for p in PROMPTS))
        done.set()
        await watcher
    assert [r.json()["choices"][0]["text"] for r in rs] == alone
    assert max(r for r, _ in seen) == 2  # batched, never past the limit
    assert max(q for _, q in seen) >= 1  # the rest waited
    with server.client() as c:
        assert gauges(c)["sglang:num_running_reqs"] == 0
