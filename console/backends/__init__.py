"""What kind of engine runs on a host: one adapter per kind (`builtin/`, `sglang/`, `vllm/`),
each implementing `EngineAdapter` (`adapter.py`): launch, flag schema, logs and /metrics,
requests and their figures, speculation on/off, what status shows."""

from __future__ import annotations

from console.backends.adapter import Bind, EngineAdapter, Speculation
from console.backends.builtin.adapter import BuiltinAdapter
from console.backends.schema import FlagSchema, FlagSpec, flags_to_argv
from console.backends.schema_discovery import DiscoveredSchema, host_command
from console.backends.sglang.adapter import SGLangAdapter
from console.backends.vllm.adapter import VLLMAdapter

# Order matters where formats overlap: ours also exposes SGLang's gauges, so it is asked
# first whether a /metrics page is its own.
ADAPTERS: dict[str, type[EngineAdapter]] = {
    "builtin": BuiltinAdapter,
    "vllm": VLLMAdapter,
    "sglang": SGLangAdapter,
}
# The names the console had before the adapter contract.
Backend = EngineAdapter
BuiltinBackend, SGLangBackend, VLLMBackend = BuiltinAdapter, SGLangAdapter, VLLMAdapter


class UnknownEngine(KeyError):
    """An engine kind no adapter implements."""


def get_adapter(kind: str) -> EngineAdapter:
    try:
        return ADAPTERS[kind]()
    except KeyError:
        raise UnknownEngine(kind) from None


get_backend = get_adapter


def all_adapters() -> list[EngineAdapter]:
    return [cls() for cls in ADAPTERS.values()]


__all__ = [
    "ADAPTERS",
    "Backend",
    "Bind",
    "BuiltinAdapter",
    "BuiltinBackend",
    "DiscoveredSchema",
    "EngineAdapter",
    "FlagSchema",
    "FlagSpec",
    "SGLangAdapter",
    "SGLangBackend",
    "Speculation",
    "UnknownEngine",
    "VLLMAdapter",
    "VLLMBackend",
    "all_adapters",
    "flags_to_argv",
    "get_adapter",
    "get_backend",
    "host_command",
]
