"""SGLang (`python -m sglang.launch_server`), including the DFlash/DDTree flags."""

from __future__ import annotations

from console.backends.logparse import SGLANG_READY
from console.backends.notes import SGLANG_NOTES
from console.backends.schema_discovery import Backend


class SGLangBackend(Backend):
    kind = "sglang"
    module = ("-m", "sglang.launch_server")
    # The uvicorn line comes first, but SGLang only serves after its warmup request,
    # which ends with its own ready line.
    ready_markers = (SGLANG_READY,)
    notes = SGLANG_NOTES
