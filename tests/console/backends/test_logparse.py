"""Log parsers on lines built from each engine's own format strings: the older formats as
written below, SGLang 0.5.23's and vLLM 0.33.0's evaluated from the f-strings and format
strings cut from their source (`fixtures/engines/*/log_formats.json`)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from console.backends import get_backend
from console.backends.logparse import (
    DecodeBatchLine,
    EngineThroughput,
    LoadingProgress,
    PrefillStats,
    Ready,
    SpecDecodingMetrics,
    parse_loading,
    parse_sglang_decode,
    parse_sglang_prefill,
    parse_vllm_spec,
    parse_vllm_throughput,
)

PREFIX = "[2026-04-01 12:00:00 TP0] "  # SGLang logger format "[%(asctime)s{prefix}] %(message)s"


def sglang_mixin_line(*, spec: bool = True, iter_msg: str = "", device: str = "cuda") -> str:
    """SGLang `scheduler_metrics_mixin.log_decode_stats`, current version."""
    num_used, token_usage, num_running_reqs = 1234, 0.0123, 1
    spec_accept_length, spec_accept_rate = 6.534, 0.4081
    can_run_cuda_graph, last_gen_throughput, waiting = True, 512.3, 0
    token_usage_msg = f"#token: {num_used}, token usage: {token_usage:.2f}, "
    msg = f"Decode batch{iter_msg}, #running-req: {num_running_reqs}, {token_usage_msg}"
    if spec:
        msg += f"accept len: {spec_accept_length:.2f}, accept rate: {spec_accept_rate:.2f}, "
    msg += (
        f"{'cuda graph' if device == 'cuda' else 'cpu graph'}: {can_run_cuda_graph}, "
        f"gen throughput (token/s): {last_gen_throughput:.2f}, "
        f"#queue-req: {waiting}, "
    )
    return PREFIX + msg


def test_sglang_current_decode_line() -> None:
    stats = parse_sglang_decode(sglang_mixin_line())
    assert stats == DecodeBatchLine(
        running_req=1, tokens=1234, token_usage=0.01, accept_len=6.53, accept_rate=0.41,
        gen_throughput=512.3, queue_req=0, graph=True, forward_ct=None,
    )  # fmt: skip


def test_sglang_decode_line_without_spec_and_with_forward_iters() -> None:
    stats = parse_sglang_decode(sglang_mixin_line(spec=False, iter_msg=" [4711]", device="cpu"))
    assert stats is not None
    assert stats.accept_len is None and stats.accept_rate is None
    assert stats.forward_ct == 4711 and stats.graph is True


def test_sglang_old_scheduler_line_has_a_period_and_no_accept_rate() -> None:
    n, num_used, u, x, b, t, q = 2, 900, 0.0456, 3.25, False, 88.0, 3
    line = f"Decode batch. #running-req: {n}, #token: {num_used}, token usage: {u:.2f}, "
    line += f"accept len: {x:.2f}, "
    line += (
        f"cuda graph: {b}, gen throughput (token/s): {t:.2f}, #queue-req: {q}"  # no trailing comma
    )
    stats = parse_sglang_decode(PREFIX + line)
    assert stats is not None
    assert (stats.running_req, stats.tokens, stats.accept_len, stats.accept_rate) == (
        2,
        900,
        3.25,
        None,
    )
    assert (stats.gen_throughput, stats.queue_req, stats.graph) == (88.0, 3, False)


def test_sglang_hybrid_model_reports_full_tokens() -> None:
    line = (
        "Decode batch, #running-req: 1, #full token: 4096, full token usage: 0.25, "
        "#swa token: 512, swa token usage: 0.10, accept len: 2.00, accept rate: 0.50, "
        "cuda graph: True, gen throughput (token/s): 40.00, #queue-req: 0"
    )
    stats = parse_sglang_decode(line)
    assert stats is not None and stats.tokens == 4096 and stats.token_usage == 0.25


def test_builtin_engine_line_as_the_engine_prints_it() -> None:
    line = (
        "[2026-11-29 09:03:13] Decode batch, #running-req: 1, #token: 46, token usage: 0.09, "
        "accept len: 1.00, accept rate: 0.12, cpu graph: False, gen throughput (token/s): "
        "104.41, #queue-req: 0, "
    )
    event = get_backend("builtin").parse_log(line)
    assert isinstance(event, DecodeBatchLine)
    assert event.graph is False and event.gen_throughput == 104.41 and event.accept_len == 1.0


def test_not_decode_lines() -> None:
    assert parse_sglang_decode("Prefill batch. #new-seq: 1, #new-token: 20") is None
    assert parse_sglang_decode("Decode batch, #running-req: 1") is None  # truncated


def vllm_line(
    mean: float,
    acc_tp: float,
    draft_tp: float,
    acc: int,
    drafted: int,
    per_pos: list[float],
    rate: float,
) -> str:
    """`vllm/v1/spec_decode/metrics.py::SpecDecodingLogging.log` (%-format as logged)."""
    fmt = (
        "SpecDecoding metrics: "
        "Mean acceptance length: %.2f, "
        "Accepted throughput: %.2f tokens/s, "
        "Drafted throughput: %.2f tokens/s, "
        "Accepted: %d tokens, "
        "Drafted: %d tokens, "
        "Per-position acceptance rate: %s, "
        "Avg Draft acceptance rate: %.1f%%"
    )
    pos = ", ".join(f"{p:.3f}" for p in per_pos)
    return "INFO 04-01 12:00:00 [metrics.py:88] " + fmt % (
        mean,
        acc_tp,
        draft_tp,
        acc,
        drafted,
        pos,
        rate,
    )


def test_vllm_current_spec_line() -> None:
    line = vllm_line(3.4567, 120.5, 300.25, 245, 600, [0.812, 0.655, 0.5], 40.83)
    m = parse_vllm_spec(line)
    assert m == SpecDecodingMetrics(
        mean_acceptance_length=3.46, accepted_throughput=120.5, drafted_throughput=300.25,
        accepted=245, drafted=600, per_position=(0.812, 0.655, 0.5), draft_acceptance_rate=40.8,
    )  # fmt: skip
    assert isinstance(get_backend("vllm").parse_log(line), SpecDecodingMetrics)


def test_vllm_nan_rate_when_nothing_was_drafted() -> None:
    line = vllm_line(0.0, 0.0, 0.0, 0, 0, [], float("nan")).replace("rate: , ", "rate: , ")
    m = parse_vllm_spec(line)
    assert m is not None and m.draft_acceptance_rate is None and m.per_position == ()


def test_vllm_very_old_spec_line() -> None:
    # vLLM logs with %-style arguments; this is that format string, filled in.
    fmt = (
        "SpecDecoding metrics: Draft acceptance rate: %.1f%%, "
        "Accepted: %d tokens, Drafted: %d tokens"
    )
    line = fmt % (61.25, 490, 800)
    m = parse_vllm_spec(line)
    assert m is not None
    assert (m.mean_acceptance_length, m.accepted, m.drafted, m.draft_acceptance_rate) == (
        None, 490, 800, 61.2,
    )  # fmt: skip


def test_loading_progress_and_tqdm_carriage_returns() -> None:
    half = "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.1s/it]"
    assert parse_loading(half) == LoadingProgress(50, 1, 2)
    frames = (
        "\rLoading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]"
        "\rLoading safetensors checkpoint shards:  25% Completed | 1/4 [00:02<00:06,  2.0s/it]"
    )
    assert parse_loading(frames) == LoadingProgress(25, 1, 4)
    assert parse_loading("Loading weights took 3.2 seconds") is None


def test_readiness_signals_per_backend() -> None:
    sglang_ready = "[2026-04-01 12:00:05] The server is fired up and ready to roll!"
    uvicorn_ready = "INFO:     Application startup complete."
    assert isinstance(get_backend("sglang").parse_log(sglang_ready), Ready)
    assert isinstance(get_backend("builtin").parse_log(sglang_ready), Ready)
    # SGLang prints uvicorn's line before its warmup: not ready yet for SGLang.
    assert get_backend("sglang").parse_log(uvicorn_ready) is None
    assert isinstance(get_backend("vllm").parse_log(uvicorn_ready), Ready)


# -- lines built from the real SGLang 0.5.23 / vLLM 0.33.0 format strings ------------------

ENGINE_FIXTURES = Path(__file__).parents[1] / "fixtures" / "engines"


def _formats(engine: str) -> dict:
    return json.loads((ENGINE_FIXTURES / engine / "log_formats.json").read_text())


def render(fstring_source: str, values: dict[str, object]) -> str:
    """Evaluate one f-string from an engine's source with chosen values: each `{expr}` is
    looked up by its full text, then by its last name (`self.last_gen_throughput` ->
    `last_gen_throughput`), and formatted with the f-string's own spec and conversion."""
    node = ast.parse("(" + fstring_source.strip() + ")", mode="eval").body
    assert isinstance(node, ast.JoinedStr)
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(part.value)
            continue
        assert isinstance(part, ast.FormattedValue)
        expr = ast.unparse(part.value)
        key = expr if expr in values else re.split(r"[.(\[]", expr.rstrip(")"))[-1]
        value = values[key]
        if part.conversion == ord("r"):
            value = repr(value)
        spec = render(ast.unparse(part.format_spec), values) if part.format_spec else ""
        out.append(format(value, spec))
    return "".join(out)


def _pick(texts: list[str], marker: str) -> str:
    return next(t for t in texts if marker in t)


SGL_VALUES = {
    "iter_msg": "", "num_running_reqs": 48, "can_run_cuda_graph": True,
    "self._graph_backend_label": "cuda graph", "last_gen_throughput": 123456.789,
    "len(self.scheduler.waiting_queue)": 7, "spec_accept_length": 6.5349,
    "spec_accept_rate": 0.40816, "full_num_used": 1234567, "full_token_usage": 0.9876,
    "num_new_seqs": 3, "log_input_tokens": 200000, "log_hit_tokens": 1024,
    "prefill_stats.num_running_reqs.total": 12, "num_pending_tokens": 5,
    "last_input_throughput": 98765.4321, "batch_iter": 4711,
}  # fmt: skip


def _sglang_line(kind: str, *, spec: bool = True, values: dict | None = None) -> str:
    f = _formats("sglang-0.5.23")
    vals = {**SGL_VALUES, **(values or {})}
    usage = ", ".join(
        [render(_pick(f[f"{kind}_usage"], "#token:" if kind == "decode" else "token usage"), vals)]
    )
    vals["token_usage_msg"] = usage + ", "
    if kind == "decode":
        msg = render(_pick(f["decode"], "Decode batch"), vals)
        if spec:
            msg += render(_pick(f["decode"], "accept len:"), vals)
        msg += render(_pick(f["decode"], "gen throughput"), vals)
    else:
        msg = render(_pick(f["prefill"], "Prefill batch"), vals)
        msg += render(_pick(f["prefill"], "_graph_backend_label"), vals)
        msg += render(_pick(f["prefill"], "input throughput"), vals)
    return PREFIX + msg


def test_sglang_0_5_23_decode_line_from_its_f_strings() -> None:
    line = _sglang_line("decode")
    assert not line.endswith(", ")  # 0.5.23 ends at #queue-req
    stats = parse_sglang_decode(line)
    assert stats == DecodeBatchLine(
        running_req=48, tokens=1234567, token_usage=0.99, accept_len=6.53, accept_rate=0.41,
        gen_throughput=123456.79, queue_req=7, graph=True, forward_ct=None,
    )  # fmt: skip
    iters = parse_sglang_decode(
        _sglang_line(
            "decode",
            spec=False,
            values={"iter_msg": " [4711]", "self._graph_backend_label": "npu graph"},
        )
    )
    assert iters is not None and iters.forward_ct == 4711 and iters.accept_len is None
    assert iters.graph is True


def test_sglang_0_5_23_prefill_line_from_its_f_strings() -> None:
    line = _sglang_line("prefill")
    assert "Prefill batch, #new-seq: 3, #new-token: 200000" in line
    stats = parse_sglang_prefill(line)
    assert stats == PrefillStats(
        new_seq=3, new_token=200000, cached_token=1024, token_usage=0.99, running_req=12,
        queue_req=7, input_throughput=98765.43, graph=True, forward_ct=None,
    )  # fmt: skip
    assert isinstance(get_backend("sglang").parse_log(line), PrefillStats)
    # The older scheduler's prefill line: a period, no graph, no throughput.
    old = (
        "Prefill batch. #new-seq: 1, #new-token: 20, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0, "
    )
    assert parse_sglang_prefill(old) == PrefillStats(1, 20, 0, 0.0, 0, 0, None, None, None)
    assert (
        parse_sglang_decode(line) is None and parse_sglang_prefill(_sglang_line("decode")) is None
    )


def _bar(bar_format: str, desc: str, n: int, total: int) -> str:
    """tqdm's `format_meter` with the engine's own bar format (tqdm is a test dependency
    of transformers; the fields are the ones tqdm fills)."""
    return bar_format.format(
        desc=desc, percentage=100 * n / total, n_fmt=str(n), total_fmt=str(total),
        elapsed="00:10", remaining="00:10", rate_fmt="3.10it/s",
    ).rstrip("\n")  # fmt: skip


def test_loading_bars_of_both_engines_from_their_formats() -> None:
    sgl = _formats("sglang-0.5.23")
    for desc in sgl["loading_desc"]:  # the default `Multi-thread loading shards` first
        line = "\r" + _bar(sgl["bar_format"], desc, 32, 64)
        assert parse_loading(line) == LoadingProgress(50, 32, 64)
        assert isinstance(get_backend("sglang").parse_log(line), LoadingProgress)
    vllm = _formats("vllm-0.33.0")
    for desc in vllm["loading_desc"]:  # and vLLM's ` (eager)` variant
        assert parse_loading(_bar(vllm["bar_format"], desc, 1, 3)) == LoadingProgress(33, 1, 3)


def _vllm_throughput(parts: list[str], args: list[object]) -> str:
    return "INFO 11-29 12:00:00 [loggers.py:259] Engine 000: " + ", ".join(parts) % tuple(args)


def test_vllm_0_33_throughput_line_from_its_format_parts() -> None:
    parts = _formats("vllm-0.33.0")["throughput_parts"]
    base = [p for p in parts if p.startswith(("Avg", "Running", "Waiting"))]
    kv = _pick(parts, "KV cache usage")
    hit = next(p for p in parts if p.startswith("Prefix cache hit rate"))
    pre = _pick(parts, "Preemptions")
    line = _vllm_throughput(
        [*base, pre, kv, hit], [123456.78, 9876.54, 256, 1024, 3, "GPU", 99.95, 87.5]
    )
    event = parse_vllm_throughput(line)
    assert event == EngineThroughput(
        prompt_throughput=123456.8, generation_throughput=9876.5, running_req=256,
        waiting_req=1024, kv_cache_usage=100.0, kv_cache_device="GPU",
        prefix_cache_hit_rate=87.5, preemptions=3,
    )  # fmt: skip
    assert isinstance(get_backend("vllm").parse_log(line), EngineThroughput)
    idle = parse_vllm_throughput(_vllm_throughput([*base, kv], [0.0, 0.0, 0, 0, "XPU", 0.0]))
    assert idle is not None and idle.kv_cache_device == "XPU" and idle.prefix_cache_hit_rate is None
    nan = parse_vllm_throughput(
        _vllm_throughput([*base, kv, hit], [float("nan"), 1.0, 1, 0, "GPU", 1.0, float("nan")])
    )
    assert nan is not None and nan.prompt_throughput == 0.0 and nan.prefix_cache_hit_rate is None
    # Older vLLM (V0 engine): `Swapped`/`Pending` and a fixed `GPU KV cache usage` label.
    old = (
        "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 31.2 tokens/s, "
        "Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.4%, "
        "CPU KV cache usage: 0.0%."
    )
    legacy = parse_vllm_throughput(old)
    assert legacy is not None and legacy.generation_throughput == 31.2
    assert (legacy.kv_cache_usage, legacy.kv_cache_device) == (0.4, "GPU")


def test_vllm_0_33_spec_line_from_its_format_with_large_numbers_and_nan() -> None:
    fmt = _formats("vllm-0.33.0")["spec_decoding"]
    rates = ", ".join(f"{p:.3f}" for p in (0.9, 0.75, 0.5))
    line = fmt % (3.15, 123456.78, 400000.0, 12345678, 39190000, rates, 31.5)
    m = parse_vllm_spec(line)
    assert m is not None and (m.accepted, m.drafted) == (12345678, 39190000)
    assert m.mean_acceptance_length == 3.15 and m.per_position == (0.9, 0.75, 0.5)
    empty = parse_vllm_spec(fmt % (1.0, 0.0, 0.0, 0, 0, "", float("nan")))
    assert empty is not None and empty.draft_acceptance_rate is None
