"""Our engine's log line, as the engine prints it: SGLang's `Decode batch` format."""

from __future__ import annotations

from console.backends import get_backend
from console.backends.logparse import (
    DecodeBatchLine,
)

PREFIX = "[2026-04-01 12:00:00 TP0] "  # SGLang logger format "[%(asctime)s{prefix}] %(message)s"


def test_builtin_engine_line_as_the_engine_prints_it() -> None:
    line = (
        "[2026-11-29 09:03:13] Decode batch, #running-req: 1, #token: 46, token usage: 0.09, "
        "accept len: 1.00, accept rate: 0.12, cpu graph: False, gen throughput (token/s): "
        "104.41, #queue-req: 0, "
    )
    event = get_backend("builtin").parse_log(line)
    assert isinstance(event, DecodeBatchLine)
    assert event.graph is False and event.gen_throughput == 104.41 and event.accept_len == 1.0
