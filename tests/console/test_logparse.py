"""Log parsers on lines built from each engine's own format strings (ddtree.md §5, §6)."""

from __future__ import annotations

from console.backends import get_backend
from console.backends.logparse import (
    DecodeStats,
    LoadingProgress,
    Ready,
    SpecDecodingMetrics,
    parse_loading,
    parse_sglang_decode,
    parse_vllm_spec,
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
    assert stats == DecodeStats(
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
    assert isinstance(event, DecodeStats)
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
    fmt = "SpecDecoding metrics: Draft acceptance rate: %.1f%%, Accepted: %d tokens, Drafted: %d tokens"
    line = fmt % (61.25, 490, 800)
    m = parse_vllm_spec(line)
    assert m is not None
    assert (m.mean_acceptance_length, m.accepted, m.drafted, m.draft_acceptance_rate) == (
        None, 490, 800, 61.2,
    )  # fmt: skip


def test_loading_progress_and_tqdm_carriage_returns() -> None:
    assert parse_loading("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.1s/it]") == (
        LoadingProgress(50, 1, 2)
    )  # fmt: skip
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
