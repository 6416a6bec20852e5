"""One HTTP client to the engine that lives as long as the service session.

A port forward over SSH costs a round trip to open and a channel to hold; a measurement
that opens one per request measures the forward, not the engine. `EngineClient` opens one
forward and one `httpx.AsyncClient` on first use and keeps them. When the link drops it
drops both, raises `EngineUnreachable`, and the next call opens them again (the SSH
transport reconnects underneath), so a long sweep or `watch` survives a reconnect.

It speaks the endpoints the console needs on every engine kind: SGLang-native
`/generate` (ours too), the OpenAI completions and chat endpoints (vLLM, SGLang, ours),
`/tokenize`, `/get_server_info`, `/health` and Prometheus `/metrics` (parsed with
`prometheus_client`'s own text parser). Requests are timed on the client with
`time.perf_counter()`; streamed responses keep every event's arrival time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import types
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from console.backends.wire import (
    MetricSample,
    MetricsScrape,
    StreamEvent,
    TimedResponse,
    parse_metrics,
)
from console.errors import ConsoleError, TransportError
from console.settings import DEFAULT_SETTINGS, ConsoleSettings
from console.transport.base import Transport

if TYPE_CHECKING:
    import httpx

__all__ = [
    "EngineClient",
    "EngineRequestError",
    "EngineUnreachable",
    "MetricSample",
    "MetricsScrape",
    "StreamEvent",
    "TimedResponse",
    "parse_metrics",
]


def _httpx() -> types.ModuleType:
    """httpx, imported at the first request: a console that draws its first frame before
    it asks an engine anything (the host picker, a stopped engine) skips its import."""
    import httpx

    return httpx


# A long decode at long context on a big model can take minutes (the settings' default).
REQUEST_TIMEOUT = DEFAULT_SETTINGS.request_timeout_s


class EngineUnreachable(TransportError):
    """The engine's port could not be reached (link down, engine not listening)."""


class EngineRequestError(ConsoleError):
    """The engine answered a request with an error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def _error_reason(response: httpx.Response) -> str:
    with contextlib.suppress(ValueError):
        data = response.json()
        if isinstance(data, dict):
            err = data.get("error", data.get("detail", data.get("message")))
            if isinstance(err, dict):
                err = err.get("message")
            if err:
                return str(err)
    return response.text.strip()[:200] or response.reason_phrase


class EngineClient:
    def __init__(
        self, transport: Transport, port: int, *, settings: ConsoleSettings | None = None
    ) -> None:
        self.transport = transport
        self.port = port
        self.settings = settings or DEFAULT_SETTINGS
        self._stack: AsyncExitStack | None = None
        self._client: httpx.AsyncClient | None = None
        self._lock = asyncio.Lock()
        self.opened = 0  # how many times a forward was opened (1 for a healthy session)

    @property
    def where(self) -> str:
        return f"the engine on {self.transport.name} (port {self.port})"

    async def _http(self) -> httpx.AsyncClient:
        async with self._lock:
            if self._client is not None:
                return self._client
            stack = AsyncExitStack()
            try:
                local_port = await stack.enter_async_context(self.transport.forward(self.port))
                client = await stack.enter_async_context(
                    _httpx().AsyncClient(base_url=f"http://127.0.0.1:{local_port}", trust_env=False)
                )
            except BaseException:
                await stack.aclose()
                raise
            self._stack, self._client = stack, client
            self.opened += 1
            return client

    async def reset(self) -> None:
        """Drop the forward and the client; the next call opens new ones."""
        async with self._lock:
            stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()

    async def close(self) -> None:
        await self.reset()

    async def _after_failure(self) -> None:
        # A refused connection while the engine starts says nothing about the link: keep
        # the forward. Only a link the transport reports as gone (sshd restarted, network
        # down) needs a new forward, which the next call opens after the reconnect.
        connected = getattr(self.transport, "is_connected", None)
        if connected is None or not connected():
            await self.reset()

    def _unreachable(self, exc: BaseException) -> EngineUnreachable:
        detail = str(exc) or type(exc).__name__
        return EngineUnreachable(f"Cannot reach {self.where}: {detail.rstrip('.')}.")

    async def request(
        self, method: str, path: str, *, json_body: Any = None, timeout: float = REQUEST_TIMEOUT
    ) -> httpx.Response:
        try:
            client = await self._http()
            return await client.request(method, path, json=json_body, timeout=timeout)
        except (_httpx().TransportError, OSError, TransportError) as exc:
            await self._after_failure()
            raise self._unreachable(exc) from None

    async def _json(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        response = await self.request(method, path, json_body=body, **kw)
        if response.status_code != 200:
            raise EngineRequestError(
                f"{self.where} answered {method} {path} with {response.status_code}: "
                f"{_error_reason(response)}",
                response.status_code,
            )
        try:
            return response.json()
        except ValueError:
            raise EngineRequestError(
                f"{self.where} answered {path} with something that is not JSON.", 502
            ) from None

    # -- small endpoints ------------------------------------------------------------

    async def healthy(self) -> bool:
        try:
            response = await self.request("GET", "/health", timeout=self.settings.probe_timeout_s)
        except EngineUnreachable:
            return False
        return response.status_code == 200

    async def server_info(self) -> dict[str, Any] | None:
        """`/get_server_info` (SGLang, ours); None where the engine has none (vLLM)."""
        for path in ("/get_server_info", "/server_info"):
            try:
                data = await self._json("GET", path, timeout=10.0)
            except EngineRequestError:
                continue
            if isinstance(data, dict):
                return data
        return None

    async def models(self) -> list[dict[str, Any]]:
        data = await self._json("GET", "/v1/models", timeout=10.0)
        return list(data.get("data", [])) if isinstance(data, dict) else []

    async def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` with no special tokens (vLLM, ours, SGLang >= 0.5)."""
        body = {"prompt": text, "add_special_tokens": False}
        data = await self._json("POST", "/tokenize", body, timeout=self.settings.command_timeout_s)
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            raise EngineRequestError(f"{self.where} returned no tokens from /tokenize.", 502)
        return [int(t) for t in tokens]

    async def metrics(self) -> MetricsScrape:
        response = await self.request("GET", "/metrics", timeout=10.0)
        if response.status_code != 200:
            raise EngineRequestError(
                f"{self.where} has no /metrics ({response.status_code}); SGLang needs "
                "--enable-metrics.",
                response.status_code,
            )
        try:
            return parse_metrics(response.text)
        except ValueError as exc:
            raise EngineRequestError(
                f"{self.where} served unreadable /metrics: {exc}", 502
            ) from None

    # -- timed generation -----------------------------------------------------------

    async def timed_post(
        self, path: str, body: dict[str, Any], *, stream: bool, timeout: float = REQUEST_TIMEOUT
    ) -> TimedResponse:
        """POST and time it on this side; for streams, record each event's arrival."""
        if not stream:
            t0 = time.perf_counter()
            data = await self._json("POST", path, body, timeout=timeout)
            return TimedResponse(200, data, time.perf_counter() - t0)
        try:
            client = await self._http()
            t0 = time.perf_counter()
            events: list[StreamEvent] = []
            async with client.stream("POST", path, json=body, timeout=timeout) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise EngineRequestError(
                        f"{self.where} answered POST {path} with {response.status_code}: "
                        f"{_error_reason(response)}",
                        response.status_code,
                    )
                async for data in _sse_events(response.aiter_lines()):
                    events.append(StreamEvent(time.perf_counter() - t0, data))
            latency = time.perf_counter() - t0
        except (_httpx().TransportError, OSError, TransportError) as exc:
            await self._after_failure()
            raise self._unreachable(exc) from None
        for event in events:
            if "error" in event.data and "choices" not in event.data:
                err = event.data["error"]
                message = err.get("message") if isinstance(err, dict) else err
                raise EngineRequestError(f"{self.where} ended the stream: {message}", 500)
        last = events[-1].data if events else {}
        return TimedResponse(200, last, latency, events=events, streamed=True)


async def _sse_events(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """JSON payloads of `data:` lines; tolerates `data:` without a space and `:` comments."""
    async for raw in lines:
        line = raw.strip()
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        with contextlib.suppress(ValueError):
            data = json.loads(payload)
            if isinstance(data, dict):
                yield data
