"""Reading a request body: size limit, strict JSON, then the endpoint's pydantic model.

Every way a body can be wrong is a 4xx with one sentence (engine/serve/errors.py), never a
500 from deep inside the engine.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from engine.serve.errors import APIError, from_pydantic

_M = TypeVar("_M", bound=BaseModel)

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64  # arrays/objects inside each other; real requests (tool schemas) stay far below
MAX_JSON_INT = 2**63  # integers at or beyond int64 are refused, not carried as bignums


async def read_json(request: Request) -> dict:
    """The request body as a JSON object, with 413 for oversized and 400 for malformed bodies."""
    length = request.headers.get("content-length")
    if length is not None:
        try:
            if int(length) > MAX_BODY_BYTES:
                raise _too_large()
        except ValueError:
            raise APIError("The Content-Length header is not a number.") from None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _too_large()
        chunks.append(chunk)
    return parse_json_body(b"".join(chunks))


def parse_json_body(raw: bytes) -> dict:
    """A request body as a JSON object, or a 400 naming what is wrong with it.

    Stricter than `json.loads` in every way that used to reach the engine as a 500: the
    bytes must be UTF-8 (RFC 8259; no UTF-16 guessing, no encoded surrogates), the text may
    not hold NaN/Infinity or numbers outside int64/float range, nesting is bounded, and no
    string (or key) may hold a lone surrogate escape such as "\\udcff", which no tokenizer
    can encode.
    """
    if not raw.strip():
        raise APIError("The request body is empty; send a JSON object.", code="invalid_json")
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise APIError(
            f"The request body is not valid UTF-8 (byte {e.start} is not "
            f"allowed there); send JSON encoded as UTF-8.",
            code="invalid_json",
        ) from None
    try:
        body = json.loads(
            text, parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite_float
        )
    except json.JSONDecodeError as e:
        raise APIError(
            f"The request body is not valid JSON ({e.msg} at character {e.pos}).",
            code="invalid_json",
        ) from None
    except RecursionError:
        raise _too_deep() from None
    if not isinstance(body, dict):
        raise APIError("The request body must be a JSON object.", code="invalid_json")
    _check_json_values(body)
    return body


def _refuse_constant(name: str):
    raise APIError(
        f"The request body holds {name}, which JSON does not allow; send a finite number.",
        code="invalid_json",
    )


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 19 or not -MAX_JSON_INT < (value := int(digits)) < MAX_JSON_INT:
        shown = digits if len(digits) <= 24 else f"{digits[:20]}... ({len(digits)} digits)"
        raise APIError(
            f"The number {shown} in the request body is too large; integers must fit in 64 bits.",
            code="invalid_json",
        )
    return value


def _finite_float(digits: str) -> float:
    value = float(digits)
    if value in (float("inf"), float("-inf")):
        shown = digits if len(digits) <= 24 else digits[:20] + "..."
        raise APIError(
            f"The number {shown} in the request body is out of range for a floating-point value.",
            code="invalid_json",
        )
    return value


def _too_deep() -> APIError:
    return APIError(
        f"The request body is nested more than {MAX_JSON_DEPTH} arrays/objects deep.",
        code="invalid_json",
    )


def _check_json_values(body: dict) -> None:
    """Bound the nesting and refuse lone surrogates, naming the field (iterative: no
    recursion for a hostile body to exhaust)."""
    stack: list[tuple[Any, int, str | None]] = [(body, 1, None)]
    while stack:
        value, depth, where = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise _too_deep()
        if isinstance(value, dict):
            for key, item in value.items():
                name = key if where is None else f"{where}.{key}"
                _check_text(key, name)
                if isinstance(item, str):
                    _check_text(item, name)
                elif isinstance(item, (dict, list)):
                    stack.append((item, depth + 1, name))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, str):
                    _check_text(item, f"{where}[{i}]")
                elif isinstance(item, (dict, list)):
                    stack.append((item, depth + 1, f"{where}[{i}]"))


def _check_text(text: str, param: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise APIError(
            f"The string in '{param}' holds a lone surrogate (\\u{ord(text[e.start]):04x} "
            f"at character {e.start}), which is not valid Unicode.",
            param=param,
            code="invalid_unicode",
        ) from None


def _too_large() -> APIError:
    return APIError(
        f"The request body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB.",
        status=413,
        code="request_too_large",
    )


def parse_body(model: type[_M], body: dict) -> _M:
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise from_pydantic(e) from None
