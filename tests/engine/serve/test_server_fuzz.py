"""Fuzz: generated requests against a real `specengine serve` process never get a 5xx.

Hypothesis builds request bodies for every POST endpoint from the fields the protocol
declares (plausible values mixed with any JSON: wrong types, huge and non-finite numbers,
lone surrogates, deep nesting) and sends them encoded in several ways (ASCII escapes, raw
UTF-8 with encoded surrogates, truncated, random bytes). Every answer must be below 500,
every error must have the OpenAI shape, every stream must end, and afterwards the server
must still be healthy and give the same greedy text as before the fuzz. Derandomized, so a
failure reproduces; the tiny random pair and a 64-token context keep each request cheap.
"""

from __future__ import annotations

import json
import time
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(600)

CONTEXT = 32
MIN_REQUESTS = 1000
GREEDY = {"text": "def f(x):\n", "sampling_params": {"max_new_tokens": 12, "ignore_eos": True}}


# How the shared `server` fixture (conftest.py) starts this module's server.
SERVER_FLAGS = (
    "--context-length",
    str(CONTEXT),
    "--served-model-name",
    "tiny",
    "--reasoning-parser",
    "qwen3",
    "--tool-call-parser",
    "qwen25",
    "--skip-server-warmup",
)


# ---- values --------------------------------------------------------------------------
# Each field has good values (accepted) and bad ones (refused with a 400). A body is clean
# (good values only: it reaches the engine and generates), has one bad field, or is wild
# (any mix), so both the generation paths and the refusals get exercised.

SURROGATES = st.sampled_from(["\udcff", "a\ud800", "\udfffz", "\ud83d"])
TEXT = st.text(max_size=12)  # hypothesis never puts a lone surrogate in st.text
PROMPT = st.text(min_size=1, max_size=12)
HUGE = st.sampled_from([2**63, -(2**63) - 1, 2**80, 10**30, 1e300, 1e308])
NON_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf")])
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-3, 70)
    | st.floats(-2, 2)
    | HUGE
    | NON_FINITE
    | TEXT
    | SURROGATES
)
ANY_JSON = st.recursive(
    LEAVES,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT | SURROGATES, kids, max_size=3),
    max_leaves=6,
)
BAD_TEXT = SURROGATES | HUGE | NON_FINITE | st.integers() | st.lists(st.integers(), max_size=2)
IDS = st.lists(st.integers(0, 255), min_size=1, max_size=10)
BAD_IDS = st.lists(st.integers(-3, 1000) | HUGE | TEXT, min_size=0, max_size=4)
BOOL = st.booleans()
BAD_BOOL = st.sampled_from(["yes", 1, 0, None, 1.0])
STOP = st.none() | TEXT | st.lists(TEXT, max_size=3)
BAD_STOP = SURROGATES | st.lists(SURROGATES | st.integers(), min_size=1, max_size=2) | HUGE
SMALL = st.integers(1, 6)
BAD_SMALL = st.sampled_from([0, -1, 100, 10**6, 2**63, 2.5, "4", None, float("nan")])
PROB = st.none() | st.floats(0.01, 1.0) | st.just(1)
BAD_PROB = st.sampled_from([0, -0.5, 1.5, "x", 1e999, float("nan"), float("inf")])
NEUTRAL = st.sampled_from([None, 0, 0.0])
BAD_PENALTY = st.sampled_from([0.5, -1, "0", float("nan"), 1e308])


def field(good, bad=st.nothing()):
    return (good, bad | ANY_JSON)


COMMON = {
    "model": field(st.sampled_from(["tiny", None]), st.sampled_from(["other", ""]) | SURROGATES),
    "temperature": field(st.sampled_from([0, 0.0, None, 0.7, 2]), st.sampled_from([-1, "0"])),
    "top_p": field(PROB, BAD_PROB),
    "top_k": field(st.integers(-1, 50), st.integers(-100, -2)),
    "n": field(st.just(1), st.sampled_from([0, 2, -1])),
    "seed": field(st.integers(0, 2**62), HUGE),
    "stream": field(BOOL, BAD_BOOL),
    "stop": field(STOP, BAD_STOP),
    "ignore_eos": field(BOOL, BAD_BOOL),
    "stream_options": field(
        st.fixed_dictionaries({}, optional={"include_usage": BOOL, "continuous_usage_stats": BOOL}),
        st.sampled_from([[], "x"]),
    ),
    "min_tokens": field(st.just(0), st.sampled_from([1, 3, -1])),
    "frequency_penalty": field(NEUTRAL, BAD_PENALTY),
    "presence_penalty": field(NEUTRAL, BAD_PENALTY),
    "repetition_penalty": field(st.sampled_from([None, 1, 1.0]), BAD_PENALTY),
    "user": field(TEXT, BAD_TEXT),
    "logit_bias": field(st.sampled_from([None, {}]), st.just({"65": 100})),
    "response_format": field(
        st.sampled_from([None, {"type": "text"}]), st.just({"type": "json_object"})
    ),
    "stop_token_ids": field(st.sampled_from([None, []]), st.just([10])),
    "return_meta_info": field(BOOL, BAD_BOOL),
    "return_commit_lengths": field(BOOL, BAD_BOOL),
    "return_round_stats": field(BOOL, BAD_BOOL),
}
COMPLETION = (
    {"prompt"},
    {
        **COMMON,
        "prompt": field(
            PROMPT
            | IDS
            | st.lists(PROMPT, min_size=1, max_size=1)
            | st.lists(IDS, min_size=1, max_size=1),
            BAD_TEXT | BAD_IDS | st.just("x" * 100) | st.lists(PROMPT, min_size=2),
        ),
        "max_tokens": field(SMALL, BAD_SMALL),
        "echo": field(st.just(False), st.just(True)),
        "logprobs": field(st.none(), st.integers(0, 3)),
        "best_of": field(st.sampled_from([None, 1]), st.just(2)),
        "suffix": field(st.sampled_from([None, ""]), st.just("end")),
    },
)
PART = st.fixed_dictionaries({"type": st.just("text"), "text": TEXT})
BAD_PART = st.fixed_dictionaries({"type": st.sampled_from(["image_url", "text"]), "text": BAD_TEXT})
MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["system", "user", "assistant"]),
        "content": PROMPT | st.lists(PART, min_size=1, max_size=2),
    }
)
BAD_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["wizard", "user", 3]),
        "content": BAD_TEXT | st.lists(BAD_PART, max_size=2),
    }
)
TOOL = {"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}
CHAT = (
    {"messages"},
    {
        **COMMON,
        "messages": field(
            st.lists(MESSAGE, min_size=1, max_size=3),
            st.lists(BAD_MESSAGE, max_size=2) | st.just([]),
        ),
        "max_tokens": field(SMALL, BAD_SMALL),
        "max_completion_tokens": field(SMALL, BAD_SMALL),
        "logprobs": field(st.just(False), st.just(True)),
        "top_logprobs": field(st.sampled_from([None, 0]), st.integers(1, 5)),
        "tools": field(st.sampled_from([None, [TOOL]]), st.just([{"type": "function"}])),
        "tool_choice": field(
            st.sampled_from(["auto", "none", None]), st.sampled_from(["required", "sometimes"])
        ),
        "separate_reasoning": field(BOOL, BAD_BOOL),
        "stream_reasoning": field(BOOL, BAD_BOOL),
    },
)
SAMPLING = (
    set(),
    {
        "max_new_tokens": field(SMALL, BAD_SMALL),
        "min_new_tokens": field(st.just(0), st.just(2)),
        "temperature": field(st.sampled_from([0, None, 1.0]), st.just(-1.0)),
        "seed": field(st.integers(0, 2**62), HUGE),
        "sampling_seed": field(st.integers(0, 2**62), HUGE),
        "top_p": field(PROB, BAD_PROB),
        "top_k": field(st.integers(-1, 50), st.just(-7)),
        "ignore_eos": field(BOOL, BAD_BOOL),
        "stop": field(STOP, BAD_STOP),
        "skip_special_tokens": field(BOOL, BAD_BOOL),
        "frequency_penalty": field(NEUTRAL, BAD_PENALTY),
        "presence_penalty": field(NEUTRAL, BAD_PENALTY),
        "repetition_penalty": field(st.sampled_from([None, 1]), BAD_PENALTY),
        "n": field(st.just(1), st.just(2)),
        "stop_token_ids": field(st.sampled_from([None, []]), IDS),
        "regex": field(st.none(), TEXT),
        "json_schema": field(st.none(), TEXT),
        "ebnf": field(st.none(), TEXT),
        "no_stop_trim": field(st.just(False), st.just(True)),
    },
)


@st.composite
def body(draw, spec: tuple[set[str], dict]) -> dict:
    required, fields = spec
    mode = draw(st.sampled_from(["clean", "clean", "one_bad", "wild"]))
    out = {}
    for name, (good, bad) in fields.items():
        if name in required or draw(st.integers(0, 3)) == 0:
            out[name] = draw(good if mode != "wild" else good | bad)
    if mode == "one_bad":
        name = draw(st.sampled_from(sorted(fields)))
        out[name] = draw(fields[name][1])
    return out


GENERATE_EXTRA = {
    "sampling_params": field(body(SAMPLING), st.sampled_from([3, [], "x"])),
    "stream": field(BOOL, BAD_BOOL),
    "rid": field(TEXT, BAD_TEXT),
    "return_logprob": field(st.just(False), st.just(True)),
    "return_text_in_logprobs": field(BOOL, BAD_BOOL),
    "return_commit_lengths": field(BOOL, BAD_BOOL),
    "return_round_stats": field(BOOL, BAD_BOOL),
    "logprob_start_len": field(st.integers(-1, 3), HUGE),
    "top_logprobs_num": field(st.integers(0, 2), HUGE),
    "return_hidden_states": field(st.just(False), st.just(True)),
    "lora_path": field(st.none(), TEXT),
}
GENERATE_TEXT = (
    {"text"},
    {
        "text": field(PROMPT, BAD_TEXT | st.just("")),
        **GENERATE_EXTRA,
        "input_ids": field(st.nothing(), IDS),
    },
)
GENERATE_IDS = (
    {"input_ids"},
    {"input_ids": field(IDS, BAD_IDS), **GENERATE_EXTRA, "text": field(st.nothing(), PROMPT)},
)
TOKENIZE = (
    {"prompt"},
    {
        "prompt": field(TEXT, BAD_TEXT),
        "text": field(st.nothing(), TEXT),
        "model": COMMON["model"],
        "add_special_tokens": field(BOOL, BAD_BOOL),
    },
)
DETOKENIZE = ({"tokens"}, {"tokens": field(IDS, BAD_IDS), "model": COMMON["model"]})

BODIES = [
    ("/v1/completions", COMPLETION),
    ("/v1/chat/completions", CHAT),
    ("/generate", GENERATE_TEXT),
    ("/generate", GENERATE_IDS),
    ("/tokenize", TOKENIZE),
    ("/detokenize", DETOKENIZE),
]


@st.composite
def requests(draw) -> tuple[str, str, bytes | None]:
    """(method, path, raw body) of one request."""
    kind = draw(st.sampled_from(["json"] * 12 + ["raw", "nested", "get"]))
    if kind == "get":
        name = draw(TEXT | SURROGATES)
        return "GET", "/v1/models/" + quote(name, safe="", errors="surrogatepass"), None
    path, spec = draw(st.sampled_from(BODIES))
    if kind == "raw":
        return "POST", path, draw(st.binary(max_size=40))
    if kind == "nested":
        depth = draw(st.integers(1, 3000))
        inner = draw(st.sampled_from([b"[", b'{"a":'])) * depth
        close = (b"]" if inner.startswith(b"[") else b"}") * depth
        return "POST", path, b'{"prompt": "a", "text": "a", "x": ' + inner + b"1" + close + b"}"
    payload = draw(body(spec))
    encoding = draw(st.sampled_from(["ascii"] * 6 + ["utf8", "truncated"]))
    if encoding == "utf8":  # raw UTF-8; a surrogate becomes bytes that UTF-8 forbids
        raw = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
    else:  # json.dumps writes NaN/Infinity and \\udcff escapes, as Python allows
        raw = json.dumps(payload).encode()
    if encoding == "truncated":
        raw = raw[: draw(st.integers(0, max(0, len(raw) - 1)))]
    return "POST", path, raw


def _check(r: httpx.Response, method: str, path: str, raw: bytes | None) -> None:
    where = f"{method} {path} {raw[:300] if raw else raw!r}"
    assert r.status_code < 500, f"{where} -> {r.status_code} {r.text[:300]}"
    if r.status_code >= 400:
        err = r.json()["error"]
        assert set(err) == {"message", "type", "param", "code"}, where
        assert err["message"].endswith(".") and "\n" not in err["message"], where
    elif r.headers.get("content-type", "").startswith("text/event-stream"):
        assert r.text.rstrip().endswith("data: [DONE]"), f"{where} -> {r.text[-300:]}"
        assert "Internal server error" not in r.text, where


def test_fuzzed_requests_never_get_a_5xx(server):
    with server.client(headers={"Content-Type": "application/json"}) as client:
        before = client.post("/generate", json=GREEDY).json()
        sent = []
        t0 = time.monotonic()

        @settings(
            max_examples=MIN_REQUESTS + 50,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(requests())
        def fuzz(request):
            method, path, raw = request
            r = client.request(method, path, content=raw)
            sent.append(r.status_code)
            _check(r, method, path, raw)

        fuzz()
        elapsed = time.monotonic() - t0
        print(f"fuzz: {len(sent)} requests in {elapsed:.1f}s, {sent.count(200)} answered 200")
        # Clean bodies must reach the engine, or the generation paths go unfuzzed.
        assert sent.count(200) >= MIN_REQUESTS // 5
        assert len(sent) >= MIN_REQUESTS
        assert server.proc.poll() is None, server.log()[-2000:]
        assert client.get("/health").status_code == 200
        after = client.post("/generate", json=GREEDY).json()
        assert after["output_ids"] == before["output_ids"]
        assert after["text"] == before["text"]
    log = server.log()
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
