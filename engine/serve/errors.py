"""OpenAI-style API errors: `{"error": {"message", "type", "param", "code"}}`.

Every client mistake becomes a 4xx with one sentence; the server never answers 500 for
bad input. FastAPI's own 422 validation errors are rewritten to this shape with 400.
"""

from __future__ import annotations

import json
import logging
import re
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

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        type_: str | None = None,
    ):
        message, param = _printable(message), _printable(param)
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        self.type = type_ or ERROR_TYPES.get(status, "invalid_request_error")

    def body(self) -> dict[str, Any]:
        return error_body(
            self.message, status=self.status, param=self.param, code=self.code, type_=self.type
        )

    def response(self) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else None
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def _printable(text: str | None) -> str | None:
    """One line that a JSON response can always encode: a control character or a lone
    surrogate taken from the request (a key, a model name) is shown as its escape."""
    if text is None or text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def error_body(
    message: str,
    *,
    status: int = 400,
    param: str | None = None,
    code: str | None = None,
    type_: str | None = None,
) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": type_ or ERROR_TYPES.get(status, "invalid_request_error"),
            "param": param,
            "code": code if code is not None else status,
        }
    }


_TYPE_TAGS = {"str", "int", "float", "bool", "dict", "list", "none", "json-or-python"}


def _is_union_tag(part) -> bool:
    # pydantic puts the union member tried ('str', 'list[int]', 'StreamOptions') in loc.
    return isinstance(part, str) and (
        part in _TYPE_TAGS or "[" in part or "(" in part or part[:1].isupper()
    )


def _split_loc(loc) -> tuple[str | None, list[str]]:
    """(dotted param name, union member tags) of a pydantic error location."""
    parts, tags = [], []
    for p in loc:
        if p in ("body", "query", "path"):
            continue
        if _is_union_tag(p):
            tags.append(str(p))
            continue
        parts.append(str(p))
    if not parts:
        return None, tags
    out = parts[0]
    for p in parts[1:]:
        out += f"[{p}]" if p.isdigit() else f".{p}"
    return out, tags


def _shown(value) -> str:
    if isinstance(value, (int, float, str, bool)) or value is None:
        shown = json.dumps(value)
    else:
        shown = f"(a JSON {'array' if isinstance(value, list) else 'object'})"
    return shown if len(shown) <= 60 else shown[:57] + "..."


def validation_error(errors: list[dict]) -> APIError:
    """One sentence for the first pydantic error, naming the offending field."""
    if not errors:
        return APIError("The request body is invalid.")
    err = errors[0]
    param, tags = _split_loc(err.get("loc", ()))
    msg = str(err.get("msg", "is invalid")).rstrip(".")
    msg = msg[0].lower() + msg[1:]
    msg = re.sub(r"valid dictionary or instance of \w+", "JSON object", msg)
    kind = err.get("type", "")
    if kind == "missing":
        text = f"The field '{param}' is required."
    elif kind == "extra_forbidden":
        text = f"The field '{param}' is not supported."
    elif param and tags:
        # A union field: list every shape that was tried for this same field.
        expected = []
        for e in errors:
            p, t = _split_loc(e.get("loc", ()))
            if p == param and t and t[0] not in expected:
                expected.append(t[0])
        text = (
            f"Invalid value {_shown(err.get('input'))} for '{param}': expected "
            f"{' or '.join(expected)}."
        )
    elif param:
        text = f"Invalid value {_shown(err.get('input'))} for '{param}': {msg}."
    else:
        text = f"The request body is invalid: {msg}."
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
        return APIError(
            f"Internal server error: {type(exc).__name__}: {exc}.".replace("..", "."), status=500
        ).response()
