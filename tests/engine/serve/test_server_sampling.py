"""Sampling through the real server: temperature, top_p, top_k and seed on every
endpoint, a seed reproduces its output, temperature 0 is the greedy output."""

from __future__ import annotations

import pytest

from tests.engine.serve._server_harness import stream

pytestmark = pytest.mark.timeout(300)

SERVER_FLAGS = ("--served-model-name", "tiny", "--skip-server-warmup")
PROMPT = "def fib(n):\n    "
N = 24


@pytest.fixture(scope="module")
def client(server):
    with server.client() as c:
        yield c


def generate(client, **sampling) -> list[int]:
    body = {
        "text": PROMPT,
        "sampling_params": {"max_new_tokens": N, "ignore_eos": True, **sampling},
    }
    r = client.post("/generate", json=body)
    assert r.status_code == 200, r.text
    assert len(r.json()["output_ids"]) == N
    return r.json()["output_ids"]


def completion(client, **fields) -> str:
    body = {"prompt": PROMPT, "max_tokens": N, "ignore_eos": True, **fields}
    r = client.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def chat(client, **fields) -> str:
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": N, **fields}
    body["ignore_eos"] = True
    r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"] or ""


def test_generate_seed_reproduces_and_temperature_zero_is_greedy(client):
    greedy = generate(client)
    assert generate(client, temperature=0, top_p=0.5, top_k=3, seed=9) == greedy
    hot = {"temperature": 1.0, "top_p": 0.95, "top_k": 200}
    first = generate(client, **hot, seed=42)
    assert generate(client, **hot, seed=42) == first
    assert generate(client, **hot, sampling_seed=42) == first  # SGLang's field name
    assert generate(client, **hot, seed=43) != first
    assert first != greedy  # 24 draws from a near-uniform random model


def test_openai_endpoints_take_the_sampling_fields(client):
    hot = {"temperature": 0.8, "top_p": 0.9, "top_k": 100, "seed": 7}
    text = completion(client, **hot)
    assert completion(client, **hot) == text
    assert completion(client, **{**hot, "seed": 8}) != text
    assert completion(client, **{**hot, "temperature": 0}) == completion(client)
    reply = chat(client, **hot)
    assert chat(client, **hot) == reply
    assert chat(client, **{**hot, "seed": 8}) != reply


def test_a_sampled_stream_is_the_sampled_body(client):
    body = completion(client, temperature=1.0, seed=3)
    hot = {"temperature": 1.0, "seed": 3, "prompt": PROMPT, "max_tokens": N, "ignore_eos": True}
    events = stream(client, "/v1/completions", {**hot, "stream": True})
    text = "".join(e["choices"][0]["text"] for e in events if isinstance(e, dict) and e["choices"])
    assert text == body


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v1/completions", {"prompt": "a", "temperature": -1}, "temperature"),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "a"}], "top_p": 0},
            "top_p",
        ),
        ("/generate", {"text": "a", "sampling_params": {"top_k": -3}}, "sampling_params.top_k"),
    ],
)
def test_invalid_sampling_values_are_a_400_with_a_reason(client, path, body, param):
    r = client.post(path, json=body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and err["message"].endswith(".")
