"""Unit tests of the server's pure parts: flags, parsers, detokenizer, metrics, error shapes."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from engine.serve.args import (
    ServeArgsError,
    build_parser,
    check_against_bundle,
    check_static,
    parse_serve_args,
)
from engine.serve.chat_parsing import (
    StreamingReasoningParser,
    parse_tool_calls,
    render_chat,
    split_reasoning,
)
from engine.serve.detokenizer import IncrementalDetokenizer
from engine.serve.errors import validation_error
from engine.serve.metrics import DecodeCounters, ServerMetrics
from engine.serve.protocol import CompletionRequest
from engine.tokenizer import byte_tokenizer
from tests.engine.serve._server_harness import SGLANG_DECODE_RE

# ---- flags -----------------------------------------------------------------------------


def test_default_paths_match_loading():
    from engine.checkpoint import DEFAULT_DRAFTER_PATH, DEFAULT_TARGET_PATH

    args = parse_serve_args([])
    assert args.model_path == DEFAULT_TARGET_PATH
    assert args.speculative_draft_model_path == DEFAULT_DRAFTER_PATH
    assert args.served_model_name == str(DEFAULT_TARGET_PATH)
    assert (args.host, args.port, args.decode_log_interval) == ("127.0.0.1", 30000, 40)
    assert args.speculative_algorithm == "DDTREE" and args.method == "ddtree"


def test_algorithm_is_case_insensitive_and_none_drops_drafter():
    args = parse_serve_args(["--speculative-algorithm", "none", "--speculative-ddtree-budget", "9"])
    assert args.speculative_algorithm == "NONE" and args.method == "ar"
    assert args.speculative_draft_model_path is None and args.speculative_ddtree_budget is None
    assert any("ignored" in w for w in args.warnings)


def test_deprecated_window_alias():
    args = parse_serve_args(["--speculative-dflash-draft-window-size", "32"])
    assert args.speculative_draft_window_size == 32
    assert any("deprecated" in w for w in args.warnings)
    ns = build_parser().parse_args(
        ["--speculative-dflash-draft-window-size", "32", "--speculative-draft-window-size", "16"]
    )
    with pytest.raises(ServeArgsError, match="disagree"):
        check_static(ns)


def test_checks_against_bundle():
    args = parse_serve_args([])
    check_against_bundle(args, max_context=512, block_size=8)
    assert args.context_length == 512
    assert args.speculative_num_draft_tokens == 8 and args.speculative_ddtree_budget == 7
    args = parse_serve_args(["--context-length", "1024"])
    with pytest.raises(ServeArgsError, match="above the model's maximum"):
        check_against_bundle(args, max_context=512, block_size=8)
    args = parse_serve_args(["--speculative-draft-window-size", "4"])
    with pytest.raises(ServeArgsError, match="at least the block size"):
        check_against_bundle(args, max_context=512, block_size=8)


def test_public_dict_masks_api_key():
    d = parse_serve_args(["--api-key", "secret"]).public_dict()
    assert d["api_key"] == "***"
    json.dumps(d)


# ---- parsers ---------------------------------------------------------------------------


def test_render_chat():
    msgs = [
        {"role": "system", "content": "S"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "def "}, {"type": "text", "text": "f():"}],
        },
    ]
    assert render_chat(msgs) == "S\n\ndef f():"
    with pytest.raises(ValueError):
        render_chat([{"role": "user", "content": [{"type": "image_url"}]}])


@pytest.mark.parametrize(
    ("parser", "text", "reasoning", "content"),
    [
        ("qwen3", "<think>abc</think>answer", "abc", "answer"),
        ("qwen3", "no tags", None, "no tags"),
        ("qwen3", "abc</think>answer", None, "abc</think>answer"),
        ("deepseek-r1", "abc</think>answer", "abc", "answer"),
        ("deepseek-r1", "<think>x</think>y", "x", "y"),
        ("qwen3", "<think>unterminated", "unterminated", ""),
    ],
)
def test_split_reasoning(parser, text, reasoning, content):
    assert split_reasoning(text, parser) == (reasoning, content)


@settings(max_examples=150, deadline=None)
@given(
    parser=st.sampled_from(["qwen3", "deepseek-r1"]),
    pieces=st.lists(
        st.sampled_from(
            ["<think>", "</think>", "<th", "ink>", "</", "think>", "a", "bc", "\n", "<", ">", "x y"]
        ),
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 80), max_size=6),
)
def test_streaming_reasoning_equals_batch(parser, pieces, cuts):
    text = "".join(pieces)
    bounds = sorted({c for c in cuts if c < len(text)} | {0, len(text)})
    p = StreamingReasoningParser(parser)
    r_out, c_out = "", ""
    for a, b in itertools.pairwise(bounds):
        r, c = p.feed(text[a:b])
        r_out, c_out = r_out + r, c_out + c
    r, c = p.feed("", final=True)
    r_out, c_out = r_out + r, c_out + c
    reasoning, content = split_reasoning(text, parser)
    assert r_out == (reasoning or "")
    assert c_out == content


def test_tool_calls():
    text = (
        'Sure.<tool_call>{"name": "get", "arguments": {"city": "Paris"}}</tool_call>'
        "<tool_call>not json</tool_call>"
    )
    content, calls = parse_tool_calls(text)
    assert [c.name for c in calls] == ["get"]
    assert json.loads(calls[0].arguments) == {"city": "Paris"}
    assert content == "Sure.<tool_call>not json</tool_call>"
    assert calls[0].as_openai(0)["type"] == "function"
    assert parse_tool_calls("plain") == ("plain", [])


# ---- detokenizer -----------------------------------------------------------------------

TOK = byte_tokenizer()


def _stream(tracker: IncrementalDetokenizer, ids: list[int]) -> tuple[str, int]:
    out, kept = "", 0
    for i, t in enumerate(ids):
        stop = tracker.add(t)
        kept = i + 1
        out += tracker.take(final=stop)
        if stop:
            return out, kept
    tracker.flush()
    return out + tracker.take(final=True), kept


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab \n") + ["é", "€", "😀"]), max_size=30),
    stop=st.sampled_from([None, "b", "ab", "\n\n", "€a", "😀"]),
)
def test_tracker_streams_exactly_the_final_text(text, stop):
    ids = TOK.encode(text)
    tracker = IncrementalDetokenizer(TOK, [stop] if stop else None)
    streamed, kept = _stream(tracker, ids)
    assert streamed == tracker.text
    assert "\ufffd" not in streamed
    if stop and stop in text:
        assert tracker.matched == stop and tracker.text == text[: text.index(stop)]
        # The token that completed the stop string is the last one kept.
        assert stop in TOK.decode(ids[:kept]) and stop not in TOK.decode(ids[: kept - 1])
    else:
        assert tracker.text == text and kept == len(ids)


def test_tracker_skips_eos():
    ids = [*TOK.encode("hi"), TOK.eos_token_id]
    tracker = IncrementalDetokenizer(TOK)
    for t in ids:
        tracker.add(t)
    tracker.flush()
    assert tracker.text == "hi"


# ---- metrics ---------------------------------------------------------------------------


def test_decode_line_format_and_interval():
    m = ServerMetrics("m")
    stats = DecodeCounters(m, interval=3, context_length=100, block_size=4, speculative=True)
    lines = [
        stats.on_round(commit_len=c, emitted=c, seconds=0.01, num_tokens=10 + i, queue=2)
        for i, c in enumerate([1, 2, 3, 4, 4, 4])
    ]
    assert lines[0] is None and lines[1] is None
    first, second = lines[2], lines[5]
    assert first.accept_len == pytest.approx(2.0) and second.accept_len == pytest.approx(4.0)
    assert first.accept_rate == pytest.approx(6 / 12)
    assert first.gen_throughput == pytest.approx(6 / 0.03)
    text = first.format()
    assert re.search(SGLANG_DECODE_RE, text)
    assert text == (
        "Decode batch, #running-req: 1, #token: 12, token usage: 0.12, "
        "accept len: 2.00, accept rate: 0.50, cpu graph: False, "
        "gen throughput (token/s): 200.00, #queue-req: 2, "
    )
    fams = {f.name: f for f in text_string_to_metric_families(m.render().decode())}
    assert fams["sglang:spec_accept_length"].samples[0].value == pytest.approx(4.0)
    assert fams["specengine:spec_verify_steps"].samples[0].value == 6
    snap = stats.snapshot()
    assert snap["avg_spec_accept_length"] == pytest.approx(18 / 6)


def test_decode_line_without_speculation():
    stats = DecodeCounters(
        ServerMetrics("m"), interval=1, context_length=10, block_size=None, speculative=False
    )
    line = stats.on_round(commit_len=1, emitted=1, seconds=0.5, num_tokens=3, queue=0)
    text = line.format()
    assert "accept len" not in text and re.search(SGLANG_DECODE_RE, text)


# ---- error shapes ----------------------------------------------------------------------


def test_validation_error_names_field():
    from pydantic import ValidationError

    try:
        CompletionRequest.model_validate({"prompt": "x", "max_tokens": "3"})
    except ValidationError as e:
        err = validation_error(e.errors()).body()["error"]
    assert err["param"] == "max_tokens" and err["type"] == "invalid_request_error"
    assert err["message"].endswith(".") and "max_tokens" in err["message"]


def test_access_log_leaves_out_successful_polls_only() -> None:
    import io
    import logging

    from engine.serve.logs import setup_logging

    out = io.StringIO()
    setup_logging("info", stream=out)
    access = logging.getLogger("uvicorn.access")
    fmt = '%s - "%s %s HTTP/%s" %d'
    access.info(fmt, "127.0.0.1:5", "GET", "/metrics", "1.1", 200)
    access.info(fmt, "127.0.0.1:5", "GET", "/health", "1.1", 200)
    access.info(fmt, "127.0.0.1:5", "GET", "/health", "1.1", 503)
    access.info(fmt, "127.0.0.1:5", "POST", "/generate", "1.1", 200)
    text = out.getvalue()
    assert "/metrics" not in text and '/health HTTP/1.1" 200' not in text
    assert '"GET /health HTTP/1.1" 503' in text and "POST /generate" in text


def test_the_round_slowdown_sleeps_its_share_of_each_rounds_compute(monkeypatch):
    # The fault flags' arithmetic: a fixed delay plus a share of what the round computed,
    # so a --debug-round-slowdown regression keeps its relative size on a slower host.
    from engine.serve import worker as worker_module

    assert parse_serve_args(["--debug-round-slowdown", "0.3"]).debug_round_slowdown == 0.3
    with pytest.raises(SystemExit):  # argparse's one-line error, as for every bad flag
        parse_serve_args(["--debug-round-slowdown", "-1"])
    clock = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # every sleep overruns by 0.3 ms, as a wake-up does
        slept.append(seconds)
        clock[0] += seconds + 0.0003

    monkeypatch.setattr(worker_module.time, "sleep", sleep)
    monkeypatch.setattr(worker_module.time, "perf_counter", lambda: clock[0])
    loop = worker_module.EngineWorker.__new__(worker_module.EngineWorker)
    loop.round_delay_s, loop.round_slowdown, loop._owed = 0.0, 0.3, 0.0
    loop._inject(0.004)
    assert slept == pytest.approx([0.0012])
    for _ in range(99):
        loop._inject(0.004)
    # 100 rounds of 4 ms owe 120 ms; the overruns are paid back, not added up (+30 ms)
    assert clock[0] == pytest.approx(0.12, abs=0.0004)
    loop._owed, slept[:] = 0.0, []
    loop.round_delay_s, loop.round_slowdown = 0.001, 0.0
    loop._inject(0.004)
    loop.round_delay_s = 0.0
    loop._inject(0.004)  # neither flag: no sleep at all
    assert slept == pytest.approx([0.001])
