"""Submitting a request to the engine thread and waiting for it from the event loop.

The engine thread (engine/serve/worker.py) calls back from its own thread; these helpers
hop each event onto the event loop, notice a client that went away (and cancel its job),
and turn an engine-side refusal into an HTTP error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Request

from engine.serve.errors import APIError
from engine.serve.worker import Delta, GenParams, Job, JobResult, ShuttingDown

if TYPE_CHECKING:
    from engine.serve.state import ServerState


async def _wait_disconnect(request: Request) -> None:
    # The body is fully read by now, so the next ASGI message is the disconnect.
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def threadsafe(loop: asyncio.AbstractEventLoop, fn: Callable[[Any], None]) -> Callable[[Any], None]:
    def call(item) -> None:
        with contextlib.suppress(RuntimeError):  # loop closed: the server is gone
            loop.call_soon_threadsafe(fn, item)

    return call


class Runner:
    """Submits a job to the engine thread and waits for it from the event loop."""

    def __init__(self, state: ServerState, request: Request, params: GenParams, t_received: float):
        self.state = state
        self.request = request
        loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        put = threadsafe(loop, self.queue.put_nowait)
        self.job = Job(
            params, on_done=put, on_delta=put if params.stream else None, t_received=t_received
        )
        try:
            state.worker.submit(self.job)
        except ShuttingDown:
            raise APIError(
                "The server is shutting down; retry on the next instance.",
                status=503,
                code="shutting_down",
            ) from None
        self.done = False

    async def first(self) -> Delta | JobResult | None:
        """The first event, or None when the client went away first (the job is cancelled)."""
        get = asyncio.ensure_future(self.queue.get())
        gone = asyncio.ensure_future(_wait_disconnect(self.request))
        done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
        if get in done:
            gone.cancel()
            event = get.result()
            self.done = isinstance(event, JobResult)
            return event
        get.cancel()
        self.cancel()
        return None

    async def next(self) -> Delta | JobResult:
        event = await self.queue.get()
        self.done = isinstance(event, JobResult)
        return event

    def cancel(self) -> None:
        if not self.done:
            self.state.worker.cancel(self.job)


def check_result(result: JobResult) -> None:
    if result.error and result.client_error:
        raise APIError(result.error[0].upper() + result.error[1:].rstrip(".") + ".")
    if result.finish_reason == "abort":
        if result.error and "shutting down" in result.error:
            raise APIError(
                "The server is shutting down; the request was aborted.",
                status=503,
                code="shutting_down",
            )
        raise APIError(
            f"The request failed inside the engine ({result.error}).",
            status=500,
            code="engine_error",
        )
