"""Log lines every engine shares (loading bars, readiness), and the helpers that build lines
from each engine's own format strings (`fixtures/engines/*/log_formats.json`)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from console.backends import get_backend
from console.backends.logparse import (
    LoadingProgress,
    Ready,
    parse_loading,
)

PREFIX = "[2026-04-01 12:00:00 TP0] "  # SGLang logger format "[%(asctime)s{prefix}] %(message)s"


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
