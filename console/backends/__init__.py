"""What kind of engine runs on a host: launch command, flag schema, logs, readiness."""

from __future__ import annotations

from console.backends.builtin import BuiltinBackend
from console.backends.schema import FlagSchema, FlagSpec, flags_to_argv
from console.backends.schema_discovery import Backend, DiscoveredSchema, host_command
from console.backends.sglang import SGLangBackend
from console.backends.vllm import VLLMBackend

_BACKENDS: dict[str, type[Backend]] = {
    "builtin": BuiltinBackend,
    "sglang": SGLangBackend,
    "vllm": VLLMBackend,
}


def get_backend(kind: str) -> Backend:
    return _BACKENDS[kind]()


__all__ = [
    "Backend",
    "BuiltinBackend",
    "DiscoveredSchema",
    "FlagSchema",
    "FlagSpec",
    "SGLangBackend",
    "VLLMBackend",
    "flags_to_argv",
    "get_backend",
    "host_command",
]
