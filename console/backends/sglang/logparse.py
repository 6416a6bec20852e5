"""SGLang's log lines (our engine prints the same): `Decode batch ...`, `Prefill batch ...`
and its ready line. The messages are stable f-strings; the logger prefix before them is
ignored (`[2026-01-01 12:00:00 TP0] `).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.backends.logtext import PAIR_RE, last_segment, num

# The uvicorn line comes first, but SGLang only serves after its warmup request, which
# ends with its own ready line.
SGLANG_READY = "The server is fired up and ready to roll!"


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


_PREFILL_RE = re.compile(r"Prefill batch(?: \[(\d+)\])?[.,]\s*(.*)$")
_DECODE_RE = re.compile(r"Decode batch(?: \[(\d+)\])?[.,]\s*(.*)$")


def parse_sglang_decode(line: str) -> DecodeBatchLine | None:
    m = _DECODE_RE.search(last_segment(line))
    if m is None:
        return None
    pairs = {k.strip(): v.strip() for k, v in PAIR_RE.findall(m.group(2))}
    running = num(pairs, "#running-req", int)
    throughput = num(pairs, "gen throughput (token/s)")
    queue = num(pairs, "#queue-req", int)
    if running is None or throughput is None or queue is None:
        return None
    graph_raw = pairs.get("cuda graph", pairs.get("cpu graph"))
    if graph_raw is None:  # newest: the label is the backend name, e.g. `npu graph`
        graph_raw = next((v for k, v in pairs.items() if k.endswith(" graph")), None)
    tokens = num(pairs, "#token", int)
    usage = num(pairs, "token usage")
    if tokens is None:
        tokens = num(pairs, "#full token", int)
        usage = num(pairs, "full token usage")
    return DecodeBatchLine(
        running_req=int(running),
        tokens=None if tokens is None else int(tokens),
        token_usage=usage,
        accept_len=num(pairs, "accept len"),
        accept_rate=num(pairs, "accept rate"),
        gen_throughput=float(throughput),
        queue_req=int(queue),
        graph=None if graph_raw is None else graph_raw == "True",
        forward_ct=int(m.group(1)) if m.group(1) else None,
    )


def parse_sglang_prefill(line: str) -> PrefillStats | None:
    m = _PREFILL_RE.search(last_segment(line))
    if m is None:
        return None
    pairs = {k.strip(): v.strip() for k, v in PAIR_RE.findall(m.group(2))}
    new_seq = num(pairs, "#new-seq", int)
    new_token = num(pairs, "#new-token", int)
    if new_seq is None or new_token is None:
        return None
    usage = num(pairs, "token usage")
    if usage is None:
        usage = num(pairs, "full token usage")
    graph_raw = next((v for k, v in pairs.items() if k.endswith(" graph")), None)
    running = num(pairs, "#running-req", int)
    queue = num(pairs, "#queue-req", int)
    cached = num(pairs, "#cached-token", int)
    return PrefillStats(
        new_seq=int(new_seq),
        new_token=int(new_token),
        cached_token=None if cached is None else int(cached),
        token_usage=usage,
        running_req=None if running is None else int(running),
        queue_req=None if queue is None else int(queue),
        input_throughput=num(pairs, "input throughput (token/s)"),
        graph=None if graph_raw is None else graph_raw == "True",
        forward_ct=int(m.group(1)) if m.group(1) else None,
    )
