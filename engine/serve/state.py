"""What every handler reads: `ServerState` (the loaded engine, its worker thread and
metrics), how it is built from the flags and the loaded weights, and how a handler gets
it back from its request.

It imports the engine thread and the metrics, never the app or an endpoint, so the app
(app.py) and every serving_* module can import it without a loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from engine.serve.args import ServeArgs
from engine.serve.metrics import DecodeCounters, ServerMetrics
from engine.serve.worker import EngineWorker


def engine_version() -> str:
    try:
        from importlib.metadata import version

        return version("specconsole")
    except Exception:
        return "0.0.0"


@dataclass
class ServerState:
    """The loaded engine, its worker thread and metrics; `create_app` stores it on
    `app.state.engine` and handlers get it back with `engine_state(request)`."""

    args: ServeArgs
    tokenizer: Any
    worker: EngineWorker
    metrics: ServerMetrics
    counters: DecodeCounters
    model_path: str
    draft_model_path: str | None
    max_model_len: int
    version: str = field(default_factory=engine_version)
    ready: bool = False
    startup_error: str | None = None
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def context_length(self) -> int:
        if self.args.context_length is None:
            raise RuntimeError("ServeArgs.context_length is set by launch before serving.")
        return self.args.context_length


def engine_state(request: Request) -> ServerState:
    return request.app.state.engine


def build_state(args: ServeArgs, bundle, decoder) -> ServerState:
    metrics = ServerMetrics(args.served_model_name)
    counters = DecodeCounters(
        metrics,
        interval=args.decode_log_interval,
        context_length=args.context_length,
        block_size=args.speculative_num_draft_tokens,
        speculative=args.speculative,
        max_running=args.max_running_requests,
    )
    tok = bundle.tokenizer
    worker = EngineWorker(
        decoder, tok, metrics=metrics, counters=counters, eos_token_ids=(tok.eos_token_id,),
        round_delay_s=args.debug_round_delay_ms / 1000.0,
        round_slowdown=args.debug_round_slowdown,
        max_running=args.max_running_requests,
    )  # fmt: skip
    return ServerState(
        args=args,
        tokenizer=tok,
        worker=worker,
        metrics=metrics,
        counters=counters,
        model_path=str(bundle.model_path),
        draft_model_path=str(bundle.draft_model_path) if bundle.draft_model_path else None,
        max_model_len=bundle.max_context,
    )
