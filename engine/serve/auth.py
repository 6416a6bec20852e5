"""API-key check for every endpoint except health probes and metrics (`--api-key`)."""

from __future__ import annotations

import hmac

from engine.serve.errors import APIError

# Probes and scrapers (a service manager, Prometheus) carry no key.
UNAUTHENTICATED_PREFIXES = ("/health", "/metrics")


class APIKeyMiddleware:
    """Pure ASGI (not BaseHTTPMiddleware, which breaks streaming disconnect detection)."""

    def __init__(self, app, api_key: str):
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope, receive, send):
        if (
            scope["type"] == "http"
            and scope.get("method") != "OPTIONS"
            and not scope["path"].startswith(UNAUTHENTICATED_PREFIXES)
        ):
            got = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                msg = (
                    "The API key is wrong; send the server's key as 'Authorization: Bearer KEY'."
                    if got
                    else "The API key is missing; send it as 'Authorization: Bearer KEY'."
                )
                await APIError(msg, status=401, code="invalid_api_key").response()(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)
