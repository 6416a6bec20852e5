"""The one request path every generating endpoint takes (`/generate`, `/v1/completions`,
`/v1/chat/completions`), like SGLang's serving base.

An endpoint says only what differs: its body model, how a body becomes GenParams (its own
checks, in its own order), and the JSON body or SSE stream it answers with. Everything
else happens here once: timing from arrival, reading and validating the body, submitting
to the engine thread, answering 499 when the client left before the first event, turning
an engine-side refusal into an HTTP error, and choosing between the two response shapes.

The engine thread (engine/serve/worker.py) calls back from its own thread; SubmittedJob
hops each event onto the event loop, notices a client that went away (and cancels its
job) and cancels it however a stream ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from fastapi import Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel

from engine.serve.errors import APIError, error_body
from engine.serve.request_body import parse_body, read_json
from engine.serve.state import ServerState
from engine.serve.worker import Delta, GenParams, Job, JobResult, ShuttingDown

# ---- server-sent events ----------------------------------------------------------------

SSE_DONE = "data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(obj: Any) -> str:
    """One `data:` event, the framing both APIs stream in."""
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


def sse_aborted(result: JobResult) -> str:
    """The error event a stream ends with when the engine aborted the job mid-way."""
    return sse(error_body(f"The request was aborted ({result.error}).", status=503))


def event_stream(events: AsyncIterator[str]) -> StreamingResponse:
    """The HTTP response that sends `events` (already framed by `sse`) as they come."""
    return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)


# ---- a job on the engine thread, seen from the event loop -------------------------------


def threadsafe(loop: asyncio.AbstractEventLoop, fn: Callable[[Any], None]) -> Callable[[Any], None]:
    """`fn` made callable from the engine thread: it runs on `loop`."""

    def call(item) -> None:
        with contextlib.suppress(RuntimeError):  # loop closed: the server is gone
            loop.call_soon_threadsafe(fn, item)

    return call


async def _wait_disconnect(request: Request) -> None:
    # The body is fully read by now, so the next ASGI message is the disconnect.
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


class SubmittedJob:
    """A job handed to the engine thread, whose events (deltas, then the result) the event
    loop awaits; cancelling it frees the engine at the next verify round."""

    def __init__(
        self,
        state: ServerState,
        request: Request,
        params: GenParams,
        t_received: float,
        rid: str | None = None,
    ):
        self.state = state
        self.request = request
        loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        put = threadsafe(loop, self.queue.put_nowait)
        self.job = Job(
            params,
            on_done=put,
            on_delta=put if params.stream else None,
            rid=rid,
            t_received=t_received,
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

    @property
    def rid(self) -> str:
        return self.job.rid

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


def raise_for_result(result: JobResult) -> None:
    """An engine-side refusal or failure as the HTTP error it means (400, 503 or 500)."""
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


# ---- the shared handler ----------------------------------------------------------------


@dataclass
class Generation:
    """One request on its way through a generating endpoint: the validated body, what the
    engine is asked for, and, once submitted, the job and its first event."""

    body: Any
    params: GenParams
    rid: str | None = None
    job: SubmittedJob | None = None
    first: Delta | JobResult | None = None

    @property
    def prompt_tokens(self) -> int:
        return len(self.params.prompt_ids)

    def meta_info(self, result: JobResult) -> dict:
        """SGLang's meta_info with the per-request extras the body asked for."""
        return result.meta_info(
            commit_lengths=self.body.return_commit_lengths,
            round_stats=self.body.return_round_stats,
        )

    async def events(self) -> AsyncIterator[Delta | JobResult]:
        """The job's events from the first one on: deltas, then the result."""
        assert self.job is not None
        event = self.first
        while isinstance(event, Delta):
            yield event
            event = await self.job.next()
        yield event


class GenerationEndpoint:
    """What a generating endpoint defines; `handle` is the request path they share."""

    body_model: ClassVar[type[BaseModel]]

    def prepare(self, state: ServerState, body: Any) -> Generation:
        """Check the body (400 for anything the engine cannot honour) and say what to run."""
        raise NotImplementedError

    def response(self, gen: Generation, result: JobResult) -> dict:
        """The non-streaming JSON body."""
        raise NotImplementedError

    def stream(self, gen: Generation) -> AsyncIterator[str]:
        """The SSE events of a streaming request, from `gen.first` on."""
        raise NotImplementedError

    async def handle(self, request: Request, state: ServerState) -> Response:
        t_received = time.perf_counter()
        body = parse_body(self.body_model, await read_json(request))
        gen = self.prepare(state, body)
        gen.job = SubmittedJob(state, request, gen.params, t_received, rid=gen.rid)
        gen.first = await gen.job.first()
        if gen.first is None:
            return Response(status_code=499)  # the client left before the first event
        if isinstance(gen.first, JobResult):
            raise_for_result(gen.first)
        if not gen.params.stream:
            return JSONResponse(self.response(gen, gen.first))
        return event_stream(self._cancel_at_end(gen))

    async def _cancel_at_end(self, gen: Generation) -> AsyncIterator[str]:
        # However the stream ends (finished, or the client disconnected mid-stream and the
        # response was cancelled), the job is cancelled, which frees the engine at the next
        # verify round; a finished job ignores it.
        assert gen.job is not None
        try:
            async for chunk in self.stream(gen):
                yield chunk
        finally:
            gen.job.cancel()
