"""vLLM's log lines: older formats as written below, vLLM 0.33.0's evaluated from the format
strings cut from its source (`fixtures/engines/vllm-0.33.0/log_formats.json`)."""

from __future__ import annotations

from console.backends import get_backend
from console.backends.logparse import (
    EngineThroughput,
    SpecDecodingMetrics,
    parse_vllm_spec,
    parse_vllm_throughput,
)
from tests.console.backends.test_logparse import _formats, _pick

PREFIX = "[2026-04-01 12:00:00 TP0] "  # SGLang logger format "[%(asctime)s{prefix}] %(message)s"


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
