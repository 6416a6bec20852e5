"""Bad input: every client mistake is a 4xx OpenAI-style error, and the server keeps serving."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.timeout(300)

KEY = "sk-test-123"
CONTEXT = 64
AUTH = {"Authorization": f"Bearer {KEY}"}
JSON_HDR = {"Content-Type": "application/json"}


# How the shared `server` fixture (conftest.py) starts this module's server.
SERVER_FLAGS = (
    "--api-key",
    KEY,
    "--context-length",
    str(CONTEXT),
    "--served-model-name",
    "tiny",
    "--skip-server-warmup",
)


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
    ("json-array", "POST", C, b"[1, 2, 3]", None, 400, None),
    ("empty-body", "POST", C, b"", None, 400, None),
    (
        "max-tokens-string",
        "POST",
        C,
        _j({**OK_PROMPT, "max_tokens": "16"}),
        None,
        400,
        "max_tokens",
    ),
    ("max-tokens-float", "POST", C, _j({**OK_PROMPT, "max_tokens": 4.5}), None, 400, "max_tokens"),
    ("prompt-int", "POST", C, _j({"prompt": 5}), None, 400, "prompt"),
    ("prompt-missing", "POST", C, _j({"max_tokens": 4}), None, 400, "prompt"),
    ("stream-string", "POST", C, _j({**OK_PROMPT, "stream": "yes"}), None, 400, "stream"),
    ("unknown-model", "POST", C, _j({**OK_PROMPT, "model": "gpt-9"}), None, 404, "model"),
    ("prompt-too-long", "POST", C, _j({"prompt": "x" * (CONTEXT + 10)}), None, 400, "prompt"),
    (
        "prompt-fills-context",
        "POST",
        C,
        _j({"prompt": list(range(65, 65 + 26)) * 3}),
        None,
        400,
        "prompt",
    ),
    (
        "max-tokens-beyond-context",
        "POST",
        C,
        _j({**OK_PROMPT, "max_tokens": CONTEXT}),
        None,
        400,
        "max_tokens",
    ),
    ("max-tokens-zero", "POST", C, _j({**OK_PROMPT, "max_tokens": 0}), None, 400, "max_tokens"),
    (
        "max-tokens-negative",
        "POST",
        C,
        _j({**OK_PROMPT, "max_tokens": -3}),
        None,
        400,
        "max_tokens",
    ),
    (
        "temperature-negative",
        "POST",
        C,
        _j({**OK_PROMPT, "temperature": -0.7}),
        None,
        400,
        "temperature",
    ),
    (
        "temperature-string",
        "POST",
        C,
        _j({**OK_PROMPT, "temperature": "hot"}),
        None,
        400,
        "temperature",
    ),
    ("n-2", "POST", C, _j({**OK_PROMPT, "n": 2}), None, 400, "n"),
    ("logprobs", "POST", C, _j({**OK_PROMPT, "logprobs": 3}), None, 400, "logprobs"),
    ("batched-prompts", "POST", C, _j({**OK_PROMPT, "prompt": ["a", "b"]}), None, 400, "prompt"),
    ("empty-prompt", "POST", C, _j({**OK_PROMPT, "prompt": ""}), None, 400, "prompt"),
    (
        "token-out-of-vocab",
        "POST",
        C,
        _j({**OK_PROMPT, "prompt": [1, 999999]}),
        None,
        400,
        "prompt",
    ),
    ("min-tokens", "POST", C, _j({**OK_PROMPT, "min_tokens": 5}), None, 400, "min_tokens"),
    (
        "stream-options-type",
        "POST",
        C,
        _j({**OK_PROMPT, "stream_options": []}),
        None,
        400,
        "stream_options",
    ),
    ("wrong-api-key", "POST", C, _j(OK_PROMPT), {"Authorization": "Bearer nope"}, 401, None),
    ("missing-api-key", "POST", C, _j(OK_PROMPT), {"Authorization": ""}, 401, None),
    ("oversized-body", "POST", C, _j({"prompt": "x" * (5 * 1024 * 1024)}), None, 413, None),
    ("chat-no-messages", "POST", CH, _j({"messages": []}), None, 400, "messages"),
    (
        "chat-bad-role",
        "POST",
        CH,
        _j({"messages": [{"role": "wizard", "content": "x"}]}),
        None,
        400,
        "messages[0].role",
    ),
    (
        "chat-image-part",
        "POST",
        CH,
        _j(
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
                ]
            }
        ),
        None,
        400,
        "messages",
    ),
    (
        "chat-max-completion-zero",
        "POST",
        CH,
        _j({"messages": MSG, "max_completion_tokens": 0}),
        None,
        400,
        "max_completion_tokens",
    ),
    (
        "chat-temperature-negative",
        "POST",
        CH,
        _j({"messages": MSG, "temperature": -1}),
        None,
        400,
        "temperature",
    ),
    (
        "generate-temperature-negative",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"temperature": -0.5}}),
        None,
        400,
        "sampling_params.temperature",
    ),
    (
        "generate-top-p-above-one",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"top_p": 1.01}}),
        None,
        400,
        "sampling_params.top_p",
    ),
    (
        "seed-string",
        "POST",
        C,
        _j({**OK_PROMPT, "seed": "7"}),
        None,
        400,
        "seed",
    ),
    (
        "generate-seeds-disagree",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"seed": 1, "sampling_seed": 2}}),
        None,
        400,
        "sampling_params.seed",
    ),
    ("generate-both-inputs", "POST", G, _j({"text": "a", "input_ids": [1]}), None, 400, "text"),
    ("generate-no-input", "POST", G, _j({"sampling_params": {}}), None, 400, "text"),
    (
        "generate-max-new-zero",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"max_new_tokens": 0}}),
        None,
        400,
        "sampling_params.max_new_tokens",
    ),
    ("generate-bad-ids", "POST", G, _j({"input_ids": [-1]}), None, 400, "input_ids"),
    (
        "generate-sampling-type",
        "POST",
        G,
        _j({"text": "a", "sampling_params": 3}),
        None,
        400,
        "sampling_params",
    ),
    (
        "generate-logprob",
        "POST",
        G,
        _j({"text": "a", "return_logprob": True}),
        None,
        400,
        "return_logprob",
    ),
    ("tokenize-no-text", "POST", "/tokenize", _j({}), None, 400, "prompt"),
    # Bodies that json.loads accepts (or chokes on) but no request can use: each is a 400
    # naming the problem, never a 500.
    ("lone-surrogate-text", "POST", G, b'{"text": "\\udcff"}', None, 400, "text"),
    (
        "lone-surrogate-stop",
        "POST",
        C,
        b'{"prompt": "a", "stop": ["x", "\\ud800"]}',
        None,
        400,
        "stop[1]",
    ),
    ("lone-surrogate-key", "POST", G, b'{"text": "a", "\\udcff": 1}', None, 400, None),
    (
        "lone-surrogate-chat",
        "POST",
        CH,
        b'{"messages": [{"role": "user", "content": "\\udfff"}]}',
        None,
        400,
        "messages[0].content",
    ),
    ("encoded-surrogate", "POST", C, b'{"prompt": "\xed\xa0\x80"}', None, 400, None),
    ("invalid-utf8-in-string", "POST", C, b'{"prompt": "\xc3\x28"}', None, 400, None),
    ("utf16-body", "POST", C, '{"prompt": "a"}'.encode("utf-16"), None, 400, None),
    (
        "deep-arrays",
        "POST",
        G,
        b'{"text": "a", "rid": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        None,
        400,
        None,
    ),
    (
        "deep-objects",
        "POST",
        C,
        b'{"prompt": "a", "user": ' + b'{"a":' * 200 + b"1" + b"}" * 200 + b"}",
        None,
        400,
        None,
    ),
    ("deep-array-body", "POST", C, b"[" * 5000 + b"]" * 5000, None, 400, None),
    (
        "huge-int",
        "POST",
        C,
        b'{"prompt": "a", "max_tokens": ' + b"9" * 5000 + b"}",
        None,
        400,
        None,
    ),
    ("int-beyond-int64", "POST", G, b'{"input_ids": [9223372036854775808]}', None, 400, None),
    ("float-overflow", "POST", C, b'{"prompt": "a", "temperature": 1e999}', None, 400, None),
    ("nan", "POST", C, b'{"prompt": "a", "top_p": NaN}', None, 400, None),
    (
        "infinity",
        "POST",
        G,
        b'{"text": "a", "sampling_params": {"temperature": Infinity}}',
        None,
        400,
        None,
    ),
    ("minus-infinity", "POST", CH, b'{"messages": [], "temperature": -Infinity}', None, 400, None),
    # Declared fields that cannot be honoured are refused, never dropped.
    (
        "top-logprobs",
        "POST",
        CH,
        _j({"messages": MSG, "top_logprobs": 2}),
        None,
        400,
        "top_logprobs",
    ),
    ("logprobs-zero", "POST", C, _j({**OK_PROMPT, "logprobs": 0}), None, 400, "logprobs"),
    (
        "logit-bias",
        "POST",
        C,
        _j({**OK_PROMPT, "logit_bias": {"65": 100}}),
        None,
        400,
        "logit_bias",
    ),
    (
        "response-format-json",
        "POST",
        CH,
        _j({"messages": MSG, "response_format": {"type": "json_object"}}),
        None,
        400,
        "response_format",
    ),
    (
        "stop-token-ids",
        "POST",
        C,
        _j({**OK_PROMPT, "stop_token_ids": [10]}),
        None,
        400,
        "stop_token_ids",
    ),
    ("top-p-zero", "POST", C, _j({**OK_PROMPT, "top_p": 0}), None, 400, "top_p"),
    ("top-p-above-one", "POST", CH, _j({"messages": MSG, "top_p": 1.5}), None, 400, "top_p"),
    (
        "top-k-negative",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"top_k": -5}}),
        None,
        400,
        "sampling_params.top_k",
    ),
    (
        "generate-n-2",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"n": 2}}),
        None,
        400,
        "sampling_params.n",
    ),
    (
        "generate-regex",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"regex": "a+"}}),
        None,
        400,
        "sampling_params.regex",
    ),
    (
        "generate-json-schema",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"json_schema": "{}"}}),
        None,
        400,
        "sampling_params.json_schema",
    ),
    (
        "generate-no-stop-trim",
        "POST",
        G,
        _j({"text": "a", "sampling_params": {"no_stop_trim": True}}),
        None,
        400,
        "sampling_params.no_stop_trim",
    ),
    (
        "generate-hidden-states",
        "POST",
        G,
        _j({"text": "a", "return_hidden_states": True}),
        None,
        400,
        "return_hidden_states",
    ),
    ("generate-lora", "POST", G, _j({"text": "a", "lora_path": "x"}), None, 400, "lora_path"),
    (
        "tools-without-parser",
        "POST",
        CH,
        _j({"messages": MSG, "tools": [{"type": "function", "function": {"name": "f"}}]}),
        None,
        400,
        "tools",
    ),
    ("unknown-endpoint", "POST", "/v1/embeddings", _j({}), None, 404, None),
    ("wrong-method", "GET", C, None, None, 405, None),
]


@pytest.mark.parametrize(
    ("method", "path", "raw", "headers", "status", "param"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
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
        client.request(case[1], case[2], content=case[3], headers={**JSON_HDR, **(case[4] or {})})
    r = client.post("/v1/completions", json={**OK_PROMPT, "ignore_eos": True})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 4
    assert "Traceback" not in server.log()


def test_health_and_metrics_need_no_key(server):
    with server.client() as c:
        assert c.get("/health").status_code == 200
        assert c.get("/metrics").status_code == 200
        assert c.get("/v1/models").status_code == 401
