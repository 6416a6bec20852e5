"""Watch a starting service until it is ready, failed or stopped, feeding a `Lifecycle`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from console.errors import TransportError
from console.service.engine_client import EngineClient
from console.service.lifecycle import (
    FAILURE_LINES,
    TERMINAL,
    Lifecycle,
    LifecycleEvent,
    log_segments,
)
from console.service.supervisor import Supervisor


async def _pump_logs(lifecycle: Lifecycle, supervisor: Supervisor) -> None:
    with contextlib.suppress(TransportError):
        async for line in supervisor.follow_logs(backlog=None):
            for segment in log_segments(line):
                lifecycle.feed_log(segment)


async def follow_until_settled(
    lifecycle: Lifecycle,
    supervisor: Supervisor,
    http: EngineClient | None,
    *,
    timeout: float,
    poll: float = 0.5,
    verify: Callable[[], Awaitable[str | None]] | None = None,
) -> LifecycleEvent:
    """Poll state and health, stream logs, and stop at the first terminal state.

    Not being ready within `timeout` counts as failed (the process is left running:
    a very large model may simply need longer; `status` shows how far it got).
    `verify`, at the first healthy answer, says why the engine answering is not ours
    (None: it is); then the start fails instead of reporting ready.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pump = asyncio.create_task(_pump_logs(lifecycle, supervisor))
    try:
        while lifecycle.state not in TERMINAL:
            lifecycle.feed_supervisor(await supervisor.state())
            if lifecycle.state in ("starting", "loading") and http is not None:
                healthy = await http.healthy()
                problem = await verify() if healthy and verify is not None else None
                if problem:
                    lifecycle.fail(problem)
                    break
                lifecycle.feed_health(healthy)
            if lifecycle.state in TERMINAL:
                break
            if loop.time() >= deadline:
                lifecycle.fail(
                    f"not ready after {timeout:g} s (still {lifecycle.current.describe()})"
                )
                break
            await asyncio.sleep(poll)
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, TransportError):
            await pump
    if lifecycle.state == "failed":
        with contextlib.suppress(TransportError):
            lifecycle.with_log_tail(await supervisor.log_tail(FAILURE_LINES))
    return lifecycle.current
