"""Our bundled engine (`specengine serve`): SGLang flag names and SGLang log format."""

from __future__ import annotations

from console.backends.sglang import SGLangBackend


class BuiltinBackend(SGLangBackend):
    kind = "builtin"
    module = ("-m", "engine.cli", "serve")
