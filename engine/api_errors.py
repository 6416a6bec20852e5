"""OpenAI-style API errors: `{"error": {"message", "type", "param", "code"}}`.

Every client mistake becomes a 4xx with one sentence; the server never answers 500 for
bad input. FastAPI's own 422 validation errors are rewritten to this shape with 400.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

logger = logging.getLogger("specengine.server")

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    500: "internal_server_error",
    503: "service_unavailable",
}


class APIError(Exception):
    """A request the server refuses, with the HTTP status and one-sentence message."""

    def __init__(self, message: str, *, status: int = 400, param: str | None = None,
                 code: str | None = None, type_: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        self.type = type_ or ERROR_TYPES.get(status, "invalid_request_error")

    def body(self) -> dict[str, Any]:
        return error_body(self.message, status=self.status, param=self.param, code=self.code,
                          type_=self.type)

    def response(self) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else None
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def error_body(message: str, *, status: int = 400, param: str | None = None,
               code: str | None = None, type_: str | None = None) -> dict[str, Any]:
    return {"error": {
        "message": message,
        "type": type_ or ERROR_TYPES.get(status, "invalid_request_error"),
        "param": param,
        "code": code if code is not None else status,
    }}


def _loc_to_param(loc: tuple | list) -> str | None:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out += f"[{p}]" if p.isdigit() else f".{p}"
    return out


def validation_error(errors: list[dict]) -> APIError:
    """One sentence for the first pydantic error, naming the offending field."""
    if not errors:
        return APIError("The request body is invalid.")
    err = errors[0]
    param = _loc_to_param(err.get("loc", ()))
    msg = str(err.get("msg", "is invalid"))
    kind = err.get("type", "")
    if kind == "missing":
        text = f"The field '{param}' is required."
    elif kind == "extra_forbidden":
        text = f"The field '{param}' is not supported."
    elif param:
        value = err.get("input")
        shown = repr(value) if isinstance(value, (int, float, str, bool)) or value is None else type(value).__name__
        if len(shown) > 60:
            shown = shown[:57] + "..."
        text = f"Invalid value {shown} for '{param}': {msg[0].lower() + msg[1:]}."
    else:
        text = f"The request body is invalid: {msg[0].lower() + msg[1:]}."
    text = text.replace("..", ".")
    return APIError(text, param=param, code="invalid_value" if param else "invalid_request")


def from_pydantic(exc: ValidationError) -> APIError:
    return validation_error(exc.errors(include_url=False))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(_request: Request, exc: APIError):
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError):
        return validation_error(list(exc.errors())).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException):
        status = exc.status_code
        if status == 404:
            message = "There is no such endpoint; see /v1/models, /generate and /get_server_info."
        elif status == 405:
            message = "This endpoint does not accept that HTTP method."
        else:
            message = str(exc.detail).rstrip(".") + "."
        return APIError(message, status=status).response()

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception):  # pragma: no cover - a bug
        logger.exception("internal error while serving a request")
        return APIError(f"Internal server error: {type(exc).__name__}: {exc}.".replace("..", "."),
                        status=500).response()
