"""A deterministic stand-in for `EngineService`, for screen snapshots only.

Snapshots need a picture with no clock, pid or temp path in it; behaviour is tested
against the real engine (test_app_engine.py). Every figure here is fixed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from console.analysis.records import LiveSample, RequestSample
from console.backends.schema import FlagSchema, FlagSpec
from console.backends.schema_discovery import DiscoveredSchema
from console.config import HostProfile
from console.service import LifecycleEvent
from console.service.engine_service import ServiceStatus
from console.service.launch import LaunchConfig

T0 = 1_800_000_000.0  # a fixed instant: samples are placed relative to it

SPECS = (
    FlagSpec("speculative-algorithm", "str", ("NONE", "DFLASH", "DDTREE"), "DDTREE",
             "Speculative decoding algorithm.", tuned=True),
    FlagSpec("speculative-num-draft-tokens", "int", None, "the drafter's block size",
             "Draft block size.", tuned=True, note="DFlash block size; fixed by the drafter."),
    FlagSpec("speculative-ddtree-budget", "int", None, "the block size minus 1",
             "Tree budget.", tuned=True),
    FlagSpec("speculative-draft-window-size", "int", None, "the full context",
             "Draft window.", tuned=True, note="Context the drafter attends to."),
    FlagSpec("context-length", "int", None, "the model's max_position_embeddings",
             "Context length.", tuned=True),
    FlagSpec("reasoning-parser", "str", ("deepseek-r1", "qwen3"), "None", "Reasoning parser.",
             tuned=True),
    FlagSpec("port", "int", None, "30000", "Port."),
    FlagSpec("log-level", "str", ("debug", "info"), "info", "Log level."),
)  # fmt: skip
ROLES = {
    "block_size": "speculative-num-draft-tokens",
    "tree_budget": "speculative-ddtree-budget",
    "draft_window": "speculative-draft-window-size",
    "context_length": "context-length",
}
FLAGS = {"port": 30000, "speculative-draft-window-size": 1024, "context-length": 2048}
CONFIG = LaunchConfig(
    engine="builtin",
    flags=FLAGS,
    argv=["python", "-m", "engine.cli", "serve", "--port", "30000",
          "--speculative-draft-window-size", "1024", "--context-length", "2048"],
)  # fmt: skip
INFO = {
    "speculative_algorithm": "DDTREE",
    "speculative_num_draft_tokens": 16,
    "speculative_ddtree_budget": 15,
    "speculative_draft_window_size": 1024,
    "context_length": 2048,
}


def status(state: str = "ready", **kw: object) -> ServiceStatus:
    base = {"host": "gpu1", "engine": "builtin", "state": state, "supervisor": "process",
            "pid": 4242 if state != "stopped" else None, "port": 30000,
            "config": CONFIG}  # fmt: skip
    base.update(kw)
    return ServiceStatus(**base)  # type: ignore[arg-type]


FAILED = status(
    "failed",
    pid=None,
    exit_code=1,
    message="the engine exited with code 1",
    log_tail=(
        "[2026-01-01 12:00:00] Loading target from engine/weights/target",
        "[2026-01-01 12:00:01] error: drafter weights not found: /nonexistent/drafter",
        "Traceback-free exit: weights error",
    ),
)


class FakeService:
    def __init__(self, st: ServiceStatus | None = None, log: list[str] | None = None) -> None:
        self.profile = HostProfile(name="gpu1")
        self._status = st or status()
        self._log = log or []
        self.busy: str | None = None

    async def status(self) -> ServiceStatus:
        return self._status

    async def server_info(self) -> dict | None:
        return INFO if self._status.state == "ready" else None

    async def current_config(self) -> LaunchConfig:
        return CONFIG

    async def schema(self) -> DiscoveredSchema:
        return DiscoveredSchema(FlagSchema({s.name: s for s in SPECS}, source="fixed"), ROLES)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[LifecycleEvent]]:
        async def events() -> AsyncIterator[LifecycleEvent]:
            await asyncio.Event().wait()
            yield LifecycleEvent("ready")  # never reached

        yield events()

    async def logs(self, *, follow: bool = False, lines: int = 200, **_: object):
        for line in self._log:
            yield line
        if follow:
            await asyncio.Event().wait()

    async def close(self) -> None:
        pass


def live_samples() -> list[LiveSample]:
    """Two minutes of samples: tok/s falls as the context grows (step time rises)."""
    out = []
    for i in range(60):
        commit = 3.2 + 0.4 * ((i % 7) / 7)
        step = 0.020 + 0.0002 * i
        out.append(LiveSample(t=T0 + 2 * i, source="log", tok_s=commit / step, commit_len=commit,
                              step_time_s=step, context_tokens=100 + 20 * i))  # fmt: skip
    return out


def requests() -> list[RequestSample]:
    def one(text_type: str, ctx: int, tok_s: float, commit: float, streamed: bool) -> RequestSample:
        return RequestSample(
            engine="builtin", endpoint="/generate", text_type=text_type, prompt_id=f"{text_type}-1",
            context_tokens=ctx, max_tokens=128, ignore_eos=True, streamed=streamed,
            flags_hash="abc", completion_tokens=128, finish_reason="length", latency_s=1.5,
            ttft_s=0.042 if streamed else None, decode_time_s=127 / tok_s, decode_source="server",
            verify_steps=round(127 / commit), decode_tok_s=tok_s, commit_len=commit,
            step_time_s=commit / tok_s, t=T0,
        )  # fmt: skip

    return [one("code", 512, 138.2, 3.61, False), one("prose", 1024, 96.4, 2.41, True)]


def sweep_samples() -> list[RequestSample]:
    """A context sweep with known physics: step time 20 ms + 10 ms per 1k context,
    commit 3.6 on code and 2.4 on prose, falling 10% from the shortest to the longest."""
    out = []
    for ctx in (64, 256, 512, 1024):
        for kind, base in (("code", 3.6), ("prose", 2.4)):
            decode_ctx = ctx + 32
            step = 0.020 + 0.010 * decode_ctx / 1000
            commit = base * (1 - 0.1 * ctx / 1024)
            out.append(RequestSample(
                engine="builtin", endpoint="/generate", text_type=kind,
                prompt_id=f"{kind}@{ctx}#0", context_tokens=ctx, max_tokens=64, ignore_eos=True,
                streamed=False, flags_hash="abc", completion_tokens=64, finish_reason="length",
                latency_s=1.0, ttft_s=None, decode_time_s=63 * step / commit,
                decode_source="server", verify_steps=round(63 / commit),
                decode_tok_s=commit / step, commit_len=commit, step_time_s=step,
                decode_context=float(decode_ctx), t=T0,
            ))  # fmt: skip
    return out
