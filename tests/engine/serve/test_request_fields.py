"""Request fields that change the output are honoured, through the real app and worker.

The decoder is scripted (it emits a fixed token list), so the generated text is known and
fields such as skip_special_tokens and stream_reasoning have something to act on; a random
tiny model would almost never emit a special token or a <think> span.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient
from tokenizers import processors

from engine.decode import RoundStats, Step
from engine.serve.app import create_app
from engine.serve.args import check_against_bundle, parse_serve_args
from engine.serve.state import build_state
from engine.tokenizer import byte_tokenizer

TOK = byte_tokenizer()
IM_START = TOK.hf.token_to_id("<|im_start|>")
CONTEXT = 64


class ScriptedDecoder:
    """Emits `tokens` one per round, stopping at EOS (unless ignored) like engine.decode."""

    def __init__(self, tokens: list[int]):
        self.tokens = tokens

    def stream(
        self,
        prompt_ids: list[int],
        *,
        max_new_tokens: int,
        eos_token_ids=(),
        ignore_eos: bool = False,
        sampling=None,  # a script ignores the sampling settings
    ) -> Iterator[Step]:
        eos = set() if ignore_eos else set(eos_token_ids)
        tokens = self.tokens[:max_new_tokens]
        for i, t in enumerate(tokens):
            reason = "stop" if t in eos else ("length" if i + 1 == len(tokens) else None)
            stats = None if i == 0 else RoundStats(1, len(prompt_ids) + i, 0.0, 0.0, 0.0, 0.0, 1)
            yield Step([t], stats, prefill_ms=0.0 if i == 0 else None, finish_reason=reason)
            if reason:
                return


@pytest.fixture
def make_client():
    states = []

    def make(tokens: list[int], *flags: str, tokenizer=TOK) -> TestClient:
        args = parse_serve_args(["--context-length", str(CONTEXT), "--skip-server-warmup", *flags])
        check_against_bundle(args, max_context=CONTEXT, block_size=8)
        bundle = SimpleNamespace(
            tokenizer=tokenizer, model_path="scripted", draft_model_path=None, max_context=CONTEXT
        )
        state = build_state(args, bundle, ScriptedDecoder(tokens))
        state.ready = True
        state.worker.start()
        states.append(state)
        return TestClient(create_app(state))

    yield make
    for state in states:
        state.worker.shutdown()
        state.worker.join(5)


def _generate(client: TestClient, **body) -> dict:
    r = client.post("/generate", json={"text": "x", **body})
    assert r.status_code == 200, r.text
    return r.json()


def _sse(client: TestClient, path: str, body: dict) -> list:
    with client.stream("POST", path, json=body) as r:
        assert r.status_code == 200, r.read()
        lines = [ln[5:].strip() for ln in r.iter_lines() if ln.startswith("data:")]
    return [ln if ln == "[DONE]" else json.loads(ln) for ln in lines]


def test_skip_special_tokens(make_client):
    tokens = [*TOK.encode("a"), IM_START, *TOK.encode("b"), TOK.eos_token_id]
    client = make_client(tokens)
    assert _generate(client)["text"] == "ab"
    kept = _generate(client, sampling_params={"skip_special_tokens": False})
    # Special tokens are in the text; the EOS that ended the request is not (as SGLang trims it).
    assert kept["text"] == "a<|im_start|>b"
    assert kept["output_ids"] == tokens
    assert kept["meta_info"]["finish_reason"] == {"type": "stop", "matched": TOK.eos_token_id}
    events = _sse(
        client,
        "/generate",
        {"text": "x", "stream": True, "sampling_params": {"skip_special_tokens": False}},
    )
    assert events[-1] == "[DONE]" and events[-2]["text"] == "a<|im_start|>b"
    # With ignore_eos the EOS is just another token, shown like the others.
    shown = _generate(
        client,
        sampling_params={
            "skip_special_tokens": False,
            "ignore_eos": True,
            "max_new_tokens": len(tokens),
        },
    )
    assert shown["text"] == "a<|im_start|>b<|endoftext|>"
    # A stop string still cuts the text that now holds special tokens.
    cut = _generate(client, sampling_params={"skip_special_tokens": False, "stop": "b"})
    assert cut["text"] == "a<|im_start|>"


def test_stream_reasoning(make_client):
    client = make_client(TOK.encode("<think>plan it</think>answer"), "--reasoning-parser", "qwen3")
    body = {"messages": [{"role": "user", "content": "q"}], "max_tokens": 40, "stream": True}

    def deltas(**extra) -> tuple[list[str], str]:
        events = _sse(client, "/v1/chat/completions", {**body, **extra})
        ds = [e["choices"][0]["delta"] for e in events[:-1] if e["choices"]]
        return (
            [d["reasoning_content"] for d in ds if d.get("reasoning_content")],
            "".join(d.get("content") or "" for d in ds),
        )

    streamed, content = deltas()
    assert "".join(streamed) == "plan it" and len(streamed) > 1 and content == "answer"
    held, content = deltas(stream_reasoning=False)
    assert held == ["plan it"] and content == "answer"
    # Not streaming: the whole reasoning is in the message either way.
    r = client.post(
        "/v1/chat/completions", json={**body, "stream": False, "stream_reasoning": False}
    )
    msg = r.json()["choices"][0]["message"]
    assert msg["reasoning_content"] == "plan it" and msg["content"] == "answer"


def test_add_special_tokens(make_client):
    tok = byte_tokenizer()
    tok.hf.post_processor = processors.TemplateProcessing(
        single="<|im_start|> $A", special_tokens=[("<|im_start|>", IM_START)]
    )
    client = make_client([TOK.eos_token_id], tokenizer=tok)
    plain = client.post("/tokenize", json={"prompt": "hi"}).json()["tokens"]
    assert plain == TOK.encode("hi")
    added = client.post("/tokenize", json={"prompt": "hi", "add_special_tokens": True})
    assert added.json()["tokens"] == [IM_START, *plain]


def test_tool_choice_that_cannot_be_forced(make_client):
    client = make_client(TOK.encode("ok"), "--tool-call-parser", "qwen25")
    body = {
        "messages": [{"role": "user", "content": "q"}],
        "max_tokens": 4,
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    assert client.post("/v1/chat/completions", json=body).status_code == 200
    for choice in ("required", {"type": "function", "function": {"name": "f"}}):
        r = client.post("/v1/chat/completions", json={**body, "tool_choice": choice})
        assert r.status_code == 400 and r.json()["error"]["param"] == "tool_choice", r.text
