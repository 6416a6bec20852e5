"""vLLM's OpenAI server; DFlash/DDTree are configured inside `--speculative-config` JSON."""

from __future__ import annotations

import json

from console.backends.logparse import UVICORN_READY
from console.backends.notes import VLLM_NOTES
from console.backends.schema_discovery import Backend
from console.config import FlagValue, HostProfile


class VLLMBackend(Backend):
    kind = "vllm"
    module = ("-m", "vllm.entrypoints.openai.api_server")
    ready_markers = (UVICORN_READY,)
    notes = VLLM_NOTES
    model_flag = "model"
    draft_flag = None  # the drafter lives in --speculative-config
    # Since 0.10 plain `--help` lists only the config groups; `--help=all` lists the flags.
    help_args = ("--help=all", "--help")

    def initial_flags(self, profile: HostProfile) -> dict[str, FlagValue]:
        flags = super().initial_flags(profile)
        if profile.draft_model_path:
            raw = flags.get("speculative-config")
            try:
                config = json.loads(raw) if isinstance(raw, str) else {}
            except json.JSONDecodeError:
                config = {}
            config.setdefault("method", "dflash")
            config["model"] = profile.draft_model_path
            flags["speculative-config"] = json.dumps(config)
        return flags
