"""vLLM's log lines: the periodic `Avg prompt throughput ...` line, `SpecDecoding metrics`,
and uvicorn's ready line. The logger prefix (`INFO 01-01 12:00:00 [metrics.py:88] `) is
ignored; the messages are stable f-strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.backends.logtext import float_or_none

UVICORN_READY = "Application startup complete."


@dataclass(frozen=True)
class SpecDecodingMetrics:
    """vLLM's `SpecDecoding metrics: ...` line, any version."""

    mean_acceptance_length: float | None  # includes the bonus token; None on old vLLM
    accepted_throughput: float | None
    drafted_throughput: float | None
    accepted: int
    drafted: int
    per_position: tuple[float, ...]
    draft_acceptance_rate: float | None  # percent; None when vLLM printed nan


@dataclass(frozen=True)
class EngineThroughput:
    """vLLM's periodic `Avg prompt throughput: ... GPU KV cache usage: x%` line."""

    prompt_throughput: float  # tokens/s over the logging interval (wall clock)
    generation_throughput: float
    running_req: int
    waiting_req: int
    kv_cache_usage: float | None  # percent
    kv_cache_device: str | None  # `GPU`, `XPU`, ...
    prefix_cache_hit_rate: float | None  # percent
    preemptions: int | None


_THROUGHPUT_RE = re.compile(
    r"Avg prompt throughput: ([\d.]+|nan) tokens/s, Avg generation throughput: ([\d.]+|nan) "
    r"tokens/s, Running: (\d+) reqs?, (?:Swapped: \d+ reqs?, )?(?:Pending|Waiting): (\d+) reqs?"
)
_KV_USAGE_RE = re.compile(r"(?:(\w+) KV cache usage|KV cache usage): ([\d.]+|nan)%")
_PREFIX_HIT_RE = re.compile(r"(?<!External )Prefix cache hit rate: ([\d.]+|nan)%")
_PREEMPTIONS_RE = re.compile(r"Preemptions: (\d+)")


def parse_vllm_throughput(line: str) -> EngineThroughput | None:
    """vLLM's engine line; older releases said `Pending:` and `Swapped:`, and `GPU KV cache
    usage` was a fixed label before the device became a `%s`."""
    m = _THROUGHPUT_RE.search(line)
    if m is None:
        return None
    kv = _KV_USAGE_RE.search(line, m.end())
    hit = _PREFIX_HIT_RE.search(line, m.end())
    pre = _PREEMPTIONS_RE.search(line, m.end())
    return EngineThroughput(
        prompt_throughput=float_or_none(m.group(1)) or 0.0,
        generation_throughput=float_or_none(m.group(2)) or 0.0,
        running_req=int(m.group(3)),
        waiting_req=int(m.group(4)),
        kv_cache_usage=float_or_none(kv.group(2)) if kv else None,
        kv_cache_device=kv.group(1) if kv and kv.group(1) else None,
        prefix_cache_hit_rate=float_or_none(hit.group(1)) if hit else None,
        preemptions=int(pre.group(1)) if pre else None,
    )


_SPEC_FIELDS = {
    "mean": re.compile(r"Mean acceptance length: ([\d.]+|nan)"),
    "acc_tp": re.compile(r"Accepted throughput: ([\d.]+|nan) tokens/s"),
    "draft_tp": re.compile(r"Drafted throughput: ([\d.]+|nan) tokens/s"),
    "accepted": re.compile(r"Accepted: (\d+) tokens"),
    "drafted": re.compile(r"Drafted: (\d+) tokens"),
    "per_pos": re.compile(r"Per-position acceptance rate: ((?:[\d.]+|nan)(?:, (?:[\d.]+|nan))*)"),
    "rate": re.compile(r"Draft acceptance rate: ([\d.]+|nan)%"),
}


def parse_vllm_spec(line: str) -> SpecDecodingMetrics | None:
    if "SpecDecoding metrics:" not in line:
        return None
    found = {k: (m.group(1) if (m := rx.search(line)) else None) for k, rx in _SPEC_FIELDS.items()}
    if found["accepted"] is None or found["drafted"] is None:
        return None
    per_pos = tuple(float(x) for x in found["per_pos"].split(", ")) if found["per_pos"] else ()
    return SpecDecodingMetrics(
        mean_acceptance_length=float_or_none(found["mean"]),
        accepted_throughput=float_or_none(found["acc_tp"]),
        drafted_throughput=float_or_none(found["draft_tp"]),
        accepted=int(found["accepted"]),
        drafted=int(found["drafted"]),
        per_position=per_pos,
        draft_acceptance_rate=float_or_none(found["rate"]),
    )
