"""Log-line parsers for the engines' own formats (SGLang, vLLM, ours = SGLang format).

Each parser takes one line and returns a typed event or None. They match on the message
text and ignore whatever logger prefix comes first (`[2026-01-01 12:00:00 TP0] `,
`INFO 01-01 12:00:00 [metrics.py:88] `), because prefixes differ across versions and
deployments while the messages below are stable f-strings (see docs: ddtree.md §5, §6).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadingProgress:
    """`Loading safetensors checkpoint shards:  50% Completed | 1/2 [...]` (SGLang, vLLM)."""

    percent: int
    done: int
    total: int


@dataclass(frozen=True)
class Ready:
    """The engine said it serves requests."""

    message: str


@dataclass(frozen=True)
class DecodeStats:
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


LogEvent = LoadingProgress | Ready | DecodeStats | SpecDecodingMetrics

_LOADING_RE = re.compile(
    r"Loading safetensors checkpoint shards:\s*(\d+)% Completed \| (\d+)/(\d+)"
)
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


def parse_sglang_decode(line: str) -> DecodeStats | None:
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
    return DecodeStats(
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
