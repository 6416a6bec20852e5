"""Bad input: every client mistake is a 4xx OpenAI-style error, and the server keeps serving."""

from __future__ import annotations

import json

import pytest

from tests.engine._server_harness import ServerProcess

pytestmark = pytest.mark.timeout(300)

KEY = "sk-test-123"
CONTEXT = 64
AUTH = {"Authorization": f"Bearer {KEY}"}
JSON_HDR = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tiny_pair):
    target, drafter = tiny_pair
    srv = ServerProcess(target, drafter, "--api-key", KEY, "--context-length", str(CONTEXT),
                        "--served-model-name", "tiny", "--skip-server-warmup")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.close()


@pytest.fixture(scope="module")
def client(server):
    with server.client(headers=AUTH) as c:
        yield c


def _j(obj) -> bytes:
    return json.dumps(obj).encode()


OK_PROMPT = {"prompt": "def f(x):", "max_tokens": 4}
C, CH, G = "/v1/completions", "/v1/chat/completions", "/generate"
MSG = [{"role": "user", "content": "hi"}]

# (id, method, path, raw body or None, extra headers or None, status, param or None)
CASES = [
    ("malformed-json", "POST", C, b'{"prompt": "x", ', None, 400, None),
    ("not-utf8", "POST", C, b'\xff\xfe{"prompt": 1}', None, 400, None),
    ("json-array", "POST", C, b'[1, 2, 3]', None, 400, None),
    ("empty-body", "POST", C, b"", None, 400, None),
    ("max-tokens-string", "POST", C, _j({**OK_PROMPT, "max_tokens": "16"}), None, 400, "max_tokens"),
    ("max-tokens-float", "POST", C, _j({**OK_PROMPT, "max_tokens": 4.5}), None, 400, "max_tokens"),
    ("prompt-int", "POST", C, _j({"prompt": 5}), None, 400, "prompt"),
    ("prompt-missing", "POST", C, _j({"max_tokens": 4}), None, 400, "prompt"),
    ("stream-string", "POST", C, _j({**OK_PROMPT, "stream": "yes"}), None, 400, "stream"),
    ("unknown-model", "POST", C, _j({**OK_PROMPT, "model": "gpt-9"}), None, 404, "model"),
    ("prompt-too-long", "POST", C, _j({"prompt": "x" * (CONTEXT + 10)}), None, 400, "prompt"),
    ("prompt-fills-context", "POST", C, _j({"prompt": list(range(65, 65 + 26)) * 3}), None, 400, "prompt"),
    ("max-tokens-beyond-context", "POST", C, _j({**OK_PROMPT, "max_tokens": CONTEXT}), None, 400, "max_tokens"),
    ("max-tokens-zero", "POST", C, _j({**OK_PROMPT, "max_tokens": 0}), None, 400, "max_tokens"),
    ("max-tokens-negative", "POST", C, _j({**OK_PROMPT, "max_tokens": -3}), None, 400, "max_tokens"),
    ("temperature-0.7", "POST", C, _j({**OK_PROMPT, "temperature": 0.7}), None, 400, "temperature"),
    ("temperature-string", "POST", C, _j({**OK_PROMPT, "temperature": "hot"}), None, 400, "temperature"),
    ("n-2", "POST", C, _j({**OK_PROMPT, "n": 2}), None, 400, "n"),
    ("logprobs", "POST", C, _j({**OK_PROMPT, "logprobs": 3}), None, 400, "logprobs"),
    ("batched-prompts", "POST", C, _j({**OK_PROMPT, "prompt": ["a", "b"]}), None, 400, "prompt"),
    ("empty-prompt", "POST", C, _j({**OK_PROMPT, "prompt": ""}), None, 400, "prompt"),
    ("token-out-of-vocab", "POST", C, _j({**OK_PROMPT, "prompt": [1, 999999]}), None, 400, "prompt"),
    ("min-tokens", "POST", C, _j({**OK_PROMPT, "min_tokens": 5}), None, 400, "min_tokens"),
    ("stream-options-type", "POST", C, _j({**OK_PROMPT, "stream_options": []}), None, 400, "stream_options"),
    ("wrong-api-key", "POST", C, _j(OK_PROMPT), {"Authorization": "Bearer nope"}, 401, None),
    ("missing-api-key", "POST", C, _j(OK_PROMPT), {"Authorization": ""}, 401, None),
    ("oversized-body", "POST", C, _j({"prompt": "x" * (5 * 1024 * 1024)}), None, 413, None),
    ("chat-no-messages", "POST", CH, _j({"messages": []}), None, 400, "messages"),
    ("chat-bad-role", "POST", CH, _j({"messages": [{"role": "wizard", "content": "x"}]}), None, 400, "messages[0].role"),
    ("chat-image-part", "POST", CH, _j({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "x"}}]}]}), None, 400, "messages"),
    ("chat-max-completion-zero", "POST", CH, _j({"messages": MSG, "max_completion_tokens": 0}), None, 400, "max_completion_tokens"),
    ("chat-temperature-1", "POST", CH, _j({"messages": MSG, "temperature": 1}), None, 400, "temperature"),
    ("generate-both-inputs", "POST", G, _j({"text": "a", "input_ids": [1]}), None, 400, "text"),
    ("generate-no-input", "POST", G, _j({"sampling_params": {}}), None, 400, "text"),
    ("generate-max-new-zero", "POST", G, _j({"text": "a", "sampling_params": {"max_new_tokens": 0}}), None, 400, "sampling_params.max_new_tokens"),
    ("generate-bad-ids", "POST", G, _j({"input_ids": [-1]}), None, 400, "input_ids"),
    ("generate-sampling-type", "POST", G, _j({"text": "a", "sampling_params": 3}), None, 400, "sampling_params"),
    ("generate-logprob", "POST", G, _j({"text": "a", "return_logprob": True}), None, 400, "return_logprob"),
    ("tokenize-no-text", "POST", "/tokenize", _j({}), None, 400, "prompt"),
    ("unknown-endpoint", "POST", "/v1/embeddings", _j({}), None, 404, None),
    ("wrong-method", "GET", C, None, None, 405, None),
]


@pytest.mark.parametrize(("method", "path", "raw", "headers", "status", "param"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(client, method, path, raw, headers, status, param):
    r = client.request(method, path, content=raw, headers={**JSON_HDR, **(headers or {})})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    message = err["message"]
    assert isinstance(message, str) and message.endswith(".") and "\n" not in message
    assert 10 < len(message) < 300, message
    if param is not None:
        assert err["param"] == param, err
    if status == 401:
        assert err["type"] == "authentication_error"


def test_case_table_is_large():
    assert len(CASES) >= 20


def test_still_serving_after_bad_input(server, client):
    for case in CASES:  # replay every bad request, then a good one
        client.request(case[1], case[2], content=case[3],
                       headers={**JSON_HDR, **(case[4] or {})})
    r = client.post("/v1/completions", json={**OK_PROMPT, "ignore_eos": True})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 4
    assert "Traceback" not in server.log()


def test_health_and_metrics_need_no_key(server):
    with server.client() as c:
        assert c.get("/health").status_code == 200
        assert c.get("/metrics").status_code == 200
        assert c.get("/v1/models").status_code == 401
