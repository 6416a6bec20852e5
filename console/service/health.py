"""`GET /health` (and friends) on the engine, through the transport's port forward."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from console.transport.base import Transport


class EngineHTTP:
    """An HTTP client to the engine's port as seen from the host."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def healthy(self) -> bool:
        try:
            response = await self.client.get("/health", timeout=3.0)
        except (httpx.HTTPError, OSError):
            return False
        return response.status_code == 200

    async def server_info(self) -> dict[str, Any] | None:
        """`/get_server_info` (SGLang and ours); None where the engine has no such endpoint."""
        try:
            response = await self.client.get("/get_server_info", timeout=10.0)
            if response.status_code != 200:
                return None
            data = response.json()
        except (httpx.HTTPError, OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


@asynccontextmanager
async def engine_http(transport: Transport, port: int) -> AsyncIterator[EngineHTTP]:
    async with (
        transport.forward(port) as local_port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{local_port}", trust_env=False) as client,
    ):
        yield EngineHTTP(client)
