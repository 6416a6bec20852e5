"""Log-line parsers for the engines' own formats (SGLang, vLLM, ours = SGLang format).

Each parser takes one line and returns a typed event or None. They match on the message
text and ignore whatever logger prefix comes first (`[2026-01-01 12:00:00 TP0] `,
`INFO 01-01 12:00:00 [metrics.py:88] `), because prefixes differ across versions and
deployments while the messages below are stable f-strings (their real format strings are
captured in tests/console/fixtures/engines/ and the tests build lines from them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.backends.logtext import last_segment
from console.backends.sglang.logparse import (
    SGLANG_READY,
    DecodeBatchLine,
    PrefillStats,
    parse_sglang_decode,
    parse_sglang_prefill,
)
from console.backends.vllm.logparse import (
    UVICORN_READY,
    EngineThroughput,
    SpecDecodingMetrics,
    parse_vllm_spec,
    parse_vllm_throughput,
)

__all__ = [
    "SGLANG_READY",
    "UVICORN_READY",
    "DecodeBatchLine",
    "EngineThroughput",
    "LoadingProgress",
    "LogEvent",
    "PrefillStats",
    "Ready",
    "SpecDecodingMetrics",
    "last_segment",
    "parse_loading",
    "parse_ready",
    "parse_sglang_decode",
    "parse_sglang_prefill",
    "parse_vllm_spec",
    "parse_vllm_throughput",
]


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


def parse_loading(line: str) -> LoadingProgress | None:
    matches = _LOADING_RE.findall(line)
    if not matches:
        return None
    percent, done, total = matches[-1]
    return LoadingProgress(int(percent), int(done), int(total))


def parse_ready(line: str, markers: tuple[str, ...]) -> Ready | None:
    for marker in markers:
        if marker in line:
            return Ready(marker)
    return None
