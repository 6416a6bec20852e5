"""Server-sent events: the `data:` framing both APIs stream in, and the response that
sends them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi.responses import StreamingResponse

SSE_DONE = "data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(obj: Any) -> str:
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


def event_stream(events: AsyncIterator[str]) -> StreamingResponse:
    """The HTTP response that sends `events` (already framed by `sse`) as they come."""
    return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)
