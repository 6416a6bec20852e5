"""Log-line parsers for the engines' own formats (SGLang, vLLM, ours = SGLang format).

Each parser takes one line and returns a typed event or None. They match on the message
text and ignore whatever logger prefix comes first (`[2026-01-01 12:00:00 TP0] `,
`INFO 01-01 12:00:00 [metrics.py:88] `), because prefixes differ across versions and
deployments while the messages below are stable f-strings (their real format strings are
captured in tests/console/fixtures/engines/ and the tests build lines from them).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadingProgress:
    """A weight-loading bar: `<desc>:  50% Completed | 1/2 [...]` (SGLang, vLLM).

    SGLang's default loader says `Multi-thread loading shards`, its others and vLLM say
    `Loading safetensors checkpoint shards` (vLLM adds ` (eager)` with the eager strategy);
    all share SGLang's/vLLM's tqdm `BAR_FORMAT`.
    """

    percent: int
    done: int
    total: int


@dataclass(frozen=True)
class Ready:
    """The engine said it serves requests."""

    message: str


@dataclass(frozen=True)
class DecodeBatchLine:
    """SGLang's periodic `Decode batch ...` line (also printed by our engine)."""

    running_req: int
    tokens: int | None  # `#token:` (or `#full token:` on hybrid SWA/Mamba models)
    token_usage: float | None
    accept_len: float | None  # None when speculative decoding is off
    accept_rate: float | None
    gen_throughput: float  # tokens/s over the last log interval
    queue_req: int
    graph: bool | None  # cuda/cpu graph used
    forward_ct: int | None  # ` [123]` when SGLANG_LOG_FORWARD_ITERS is set


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
class PrefillStats:
    """SGLang's `Prefill batch ...` line: one per prefill batch (our engine prints none)."""

    new_seq: int
    new_token: int
    cached_token: int | None
    token_usage: float | None
    running_req: int | None
    queue_req: int | None
    input_throughput: float | None  # tokens/s since the previous prefill line; newer only
    graph: bool | None
    forward_ct: int | None


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


LogEvent = (
    LoadingProgress
    | Ready
    | DecodeBatchLine
    | SpecDecodingMetrics
    | PrefillStats
    | EngineThroughput
)

_LOADING_RE = re.compile(
    r"(?:Loading safetensors checkpoint shards(?: \([\w -]+\))?|Multi-thread loading shards"
    r"|Loading pt checkpoint shards|Loading weights):\s*(\d+)% Completed \| (\d+)/(\d+)"
)
_PREFILL_RE = re.compile(r"Prefill batch(?: \[(\d+)\])?[.,]\s*(.*)$")
_DECODE_RE = re.compile(r"Decode batch(?: \[(\d+)\])?[.,]\s*(.*)$")
# `key: value` pairs of the decode line; keys may contain spaces, `#`, `(token/s)`.
_PAIR_RE = re.compile(r"(#?[A-Za-z][\w .-]*?(?: \([^)]*\))?): ([^,]+)")

SGLANG_READY = "The server is fired up and ready to roll!"
UVICORN_READY = "Application startup complete."


def _last_segment(line: str) -> str:
    # tqdm redraws with carriage returns; a log file line may hold several frames.
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1] if parts else ""


def parse_loading(line: str) -> LoadingProgress | None:
    matches = _LOADING_RE.findall(line)
    if not matches:
        return None
    percent, done, total = matches[-1]
    return LoadingProgress(int(percent), int(done), int(total))


def _num(pairs: dict[str, str], key: str, cast: type = float) -> float | int | None:
    raw = pairs.get(key)
    if raw is None:
        return None
    try:
        return cast(raw.strip())
    except ValueError:
        return None


def parse_sglang_decode(line: str) -> DecodeBatchLine | None:
    m = _DECODE_RE.search(_last_segment(line))
    if m is None:
        return None
    pairs = {k.strip(): v.strip() for k, v in _PAIR_RE.findall(m.group(2))}
    running = _num(pairs, "#running-req", int)
    throughput = _num(pairs, "gen throughput (token/s)")
    queue = _num(pairs, "#queue-req", int)
    if running is None or throughput is None or queue is None:
        return None
    graph_raw = pairs.get("cuda graph", pairs.get("cpu graph"))
    if graph_raw is None:  # newest: the label is the backend name, e.g. `npu graph`
        graph_raw = next((v for k, v in pairs.items() if k.endswith(" graph")), None)
    tokens = _num(pairs, "#token", int)
    usage = _num(pairs, "token usage")
    if tokens is None:
        tokens = _num(pairs, "#full token", int)
        usage = _num(pairs, "full token usage")
    return DecodeBatchLine(
        running_req=int(running),
        tokens=None if tokens is None else int(tokens),
        token_usage=usage,
        accept_len=_num(pairs, "accept len"),
        accept_rate=_num(pairs, "accept rate"),
        gen_throughput=float(throughput),
        queue_req=int(queue),
        graph=None if graph_raw is None else graph_raw == "True",
        forward_ct=int(m.group(1)) if m.group(1) else None,
    )


def parse_sglang_prefill(line: str) -> PrefillStats | None:
    m = _PREFILL_RE.search(_last_segment(line))
    if m is None:
        return None
    pairs = {k.strip(): v.strip() for k, v in _PAIR_RE.findall(m.group(2))}
    new_seq = _num(pairs, "#new-seq", int)
    new_token = _num(pairs, "#new-token", int)
    if new_seq is None or new_token is None:
        return None
    usage = _num(pairs, "token usage")
    if usage is None:
        usage = _num(pairs, "full token usage")
    graph_raw = next((v for k, v in pairs.items() if k.endswith(" graph")), None)
    running = _num(pairs, "#running-req", int)
    queue = _num(pairs, "#queue-req", int)
    cached = _num(pairs, "#cached-token", int)
    return PrefillStats(
        new_seq=int(new_seq),
        new_token=int(new_token),
        cached_token=None if cached is None else int(cached),
        token_usage=usage,
        running_req=None if running is None else int(running),
        queue_req=None if queue is None else int(queue),
        input_throughput=_num(pairs, "input throughput (token/s)"),
        graph=None if graph_raw is None else graph_raw == "True",
        forward_ct=int(m.group(1)) if m.group(1) else None,
    )


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
        prompt_throughput=_float_or_none(m.group(1)) or 0.0,
        generation_throughput=_float_or_none(m.group(2)) or 0.0,
        running_req=int(m.group(3)),
        waiting_req=int(m.group(4)),
        kv_cache_usage=_float_or_none(kv.group(2)) if kv else None,
        kv_cache_device=kv.group(1) if kv and kv.group(1) else None,
        prefix_cache_hit_rate=_float_or_none(hit.group(1)) if hit else None,
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


def _float_or_none(text: str | None) -> float | None:
    if text is None:
        return None
    value = float(text)
    return None if math.isnan(value) else value


def parse_vllm_spec(line: str) -> SpecDecodingMetrics | None:
    if "SpecDecoding metrics:" not in line:
        return None
    found = {k: (m.group(1) if (m := rx.search(line)) else None) for k, rx in _SPEC_FIELDS.items()}
    if found["accepted"] is None or found["drafted"] is None:
        return None
    per_pos = tuple(float(x) for x in found["per_pos"].split(", ")) if found["per_pos"] else ()
    return SpecDecodingMetrics(
        mean_acceptance_length=_float_or_none(found["mean"]),
        accepted_throughput=_float_or_none(found["acc_tp"]),
        drafted_throughput=_float_or_none(found["draft_tp"]),
        accepted=int(found["accepted"]),
        drafted=int(found["drafted"]),
        per_position=per_pos,
        draft_acceptance_rate=_float_or_none(found["rate"]),
    )


def parse_ready(line: str, markers: tuple[str, ...]) -> Ready | None:
    for marker in markers:
        if marker in line:
            return Ready(marker)
    return None
