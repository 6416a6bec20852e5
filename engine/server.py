"""`specengine serve`: the DDTree engine behind an OpenAI- and SGLang-compatible HTTP API.

FastAPI on uvicorn: the event loop only parses requests, formats responses and streams
SSE; all torch work runs on the single engine thread (engine/worker.py), one request at
a time in arrival order. Endpoints:

  POST /v1/completions, /v1/chat/completions   OpenAI shapes, SSE streaming, usage
  POST /generate                                SGLang native, meta_info always
  POST /tokenize, /detokenize
  GET  /health, /health_generate, /v1/models, /get_server_info (/server_info),
       /get_model_info (/model_info), /metrics

Logs go to stdout in SGLang's formats (engine/logs.py, engine/metrics.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import socket
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ValidationError

from engine.api_errors import APIError, error_body, from_pydantic, install_error_handlers
from engine.logs import READY_MESSAGE, ShardProgress, setup_logging
from engine.metrics import METRICS_CONTENT_TYPE, DecodeStats, ServerMetrics
from engine.parsers import (
    TOOL_START,
    StreamingReasoningParser,
    parse_tool_calls,
    render_chat,
    split_reasoning,
)
from engine.protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    DetokenizeRequest,
    GenerateRequest,
    TokenizeRequest,
)
from engine.serve_args import (
    ServeArgs,
    ServeArgsError,
    check_against_bundle,
    fail,
    parse_serve_args,
)
from engine.worker import Delta, EngineWorker, GenParams, Job, JobResult, ShuttingDown

logger = logging.getLogger("specengine.server")
_M = TypeVar("_M", bound=BaseModel)

MAX_BODY_BYTES = 4 * 1024 * 1024
COMPLETIONS_DEFAULT_MAX_TOKENS = 16    # OpenAI / vLLM / SGLang default for /v1/completions
GENERATE_DEFAULT_MAX_NEW_TOKENS = 128  # SGLang's SamplingParams default
HEALTH_GENERATE_TIMEOUT_S = 20.0       # SGLang's SGLANG_HEALTH_CHECK_TIMEOUT default
UNAUTHENTICATED_PREFIXES = ("/health", "/metrics")


def engine_version() -> str:
    try:
        from importlib.metadata import version
        return version("specconsole")
    except Exception:
        return "0.0.0"


@dataclass
class ServerState:
    args: ServeArgs
    tokenizer: Any
    worker: EngineWorker
    metrics: ServerMetrics
    stats: DecodeStats
    model_path: str
    draft_model_path: str | None
    max_model_len: int
    version: str = field(default_factory=engine_version)
    ready: bool = False
    startup_error: str | None = None
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def context_length(self) -> int:
        assert self.args.context_length is not None
        return self.args.context_length


# --------------------------------------------------------------------------------------
# Request plumbing
# --------------------------------------------------------------------------------------

class APIKeyMiddleware:
    """Pure ASGI (not BaseHTTPMiddleware, which breaks streaming disconnect detection)."""

    def __init__(self, app, api_key: str):
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope.get("method") != "OPTIONS" \
                and not scope["path"].startswith(UNAUTHENTICATED_PREFIXES):
            got = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                msg = ("The API key is wrong; send the server's key as 'Authorization: Bearer KEY'."
                       if got else "The API key is missing; send it as 'Authorization: Bearer KEY'.")
                await APIError(msg, status=401, code="invalid_api_key").response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


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


MAX_JSON_DEPTH = 64        # arrays/objects inside each other; real requests (tool schemas) stay far below
MAX_JSON_INT = 2 ** 63     # integers at or beyond int64 are refused, not carried as bignums


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
        raise APIError(f"The request body is not valid UTF-8 (byte {e.start} is not "
                       f"allowed there); send JSON encoded as UTF-8.", code="invalid_json") from None
    try:
        body = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int,
                          parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise APIError(f"The request body is not valid JSON ({e.msg} at character {e.pos}).",
                       code="invalid_json") from None
    except RecursionError:
        raise _too_deep() from None
    if not isinstance(body, dict):
        raise APIError("The request body must be a JSON object.", code="invalid_json")
    _check_json_values(body)
    return body


def _refuse_constant(name: str):
    raise APIError(f"The request body holds {name}, which JSON does not allow; send a finite "
                   f"number.", code="invalid_json")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 19 or not -MAX_JSON_INT < (value := int(digits)) < MAX_JSON_INT:
        shown = digits if len(digits) <= 24 else f"{digits[:20]}... ({len(digits)} digits)"
        raise APIError(f"The number {shown} in the request body is too large; integers must "
                       f"fit in 64 bits.", code="invalid_json")
    return value


def _finite_float(digits: str) -> float:
    value = float(digits)
    if value in (float("inf"), float("-inf")):
        shown = digits if len(digits) <= 24 else digits[:20] + "..."
        raise APIError(f"The number {shown} in the request body is out of range for a "
                       f"floating-point value.", code="invalid_json")
    return value


def _too_deep() -> APIError:
    return APIError(f"The request body is nested more than {MAX_JSON_DEPTH} arrays/objects "
                    f"deep.", code="invalid_json")


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
        raise APIError(f"The string in '{param}' holds a lone surrogate (\\u{ord(text[e.start]):04x} "
                       f"at character {e.start}), which is not valid Unicode.", param=param,
                       code="invalid_unicode") from None


def _too_large() -> APIError:
    return APIError(f"The request body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB.",
                    status=413, code="request_too_large")


def parse_body(model: type[_M], body: dict) -> _M:
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise from_pydantic(e) from None


async def _wait_disconnect(request: Request) -> None:
    # The body is fully read by now, so the next ASGI message is the disconnect.
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def _threadsafe(loop: asyncio.AbstractEventLoop, fn: Callable[[Any], None]) -> Callable[[Any], None]:
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
        put = _threadsafe(loop, self.queue.put_nowait)
        self.job = Job(params, on_done=put, on_delta=put if params.stream else None,
                       t_received=t_received)
        try:
            state.worker.submit(self.job)
        except ShuttingDown:
            raise APIError("The server is shutting down; retry on the next instance.",
                           status=503, code="shutting_down") from None
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


def _check_result(result: JobResult) -> None:
    if result.error and result.client_error:
        raise APIError(result.error[0].upper() + result.error[1:].rstrip(".") + ".")
    if result.finish_reason == "abort":
        if result.error and "shutting down" in result.error:
            raise APIError("The server is shutting down; the request was aborted.", status=503,
                           code="shutting_down")
        raise APIError(f"The request failed inside the engine ({result.error}).", status=500,
                       code="engine_error")


# --------------------------------------------------------------------------------------
# Shared request checks
# --------------------------------------------------------------------------------------

def check_model(state: ServerState, name: str | None) -> None:
    if name is None or name in (state.args.served_model_name, state.model_path):
        return
    raise APIError(f"The model '{name}' does not exist; this server serves "
                   f"'{state.args.served_model_name}'.", status=404, param="model",
                   code="model_not_found")


def check_sampling(*, temperature, n=1, min_tokens=0, frequency_penalty=None,
                   presence_penalty=None, repetition_penalty=None, logprobs=False,
                   top_p=None, top_k=None, min_field="min_tokens", logprobs_field="logprobs",
                   prefix="") -> None:
    if temperature is not None and temperature != 0:
        raise APIError(f"temperature {temperature:g} is not supported: this engine decodes "
                       f"greedily only, so send temperature 0 or omit it.",
                       param=f"{prefix}temperature",
                       code="unsupported_temperature")
    if n != 1:
        raise APIError(f"n={n} is not supported: greedy decoding gives one completion per "
                       f"request, so send n=1.", param=f"{prefix}n")
    # Greedy decoding keeps the argmax under any valid top_p/top_k, so these only need to
    # be valid (the ranges SGLang and vLLM enforce).
    if top_p is not None and not 0 < top_p <= 1:
        raise APIError(f"top_p must be in (0, 1], got {top_p:g}.", param=f"{prefix}top_p")
    if top_k is not None and top_k < -1:
        raise APIError(f"top_k must be -1 (no limit), 0 or a positive count, got {top_k}.",
                       param=f"{prefix}top_k")
    if min_tokens:
        raise APIError(f"{min_field} is not supported; use ignore_eos with max_tokens for an "
                       f"exact output length.", param=min_field)
    for name, value, neutral in (("frequency_penalty", frequency_penalty, 0),
                                 ("presence_penalty", presence_penalty, 0),
                                 ("repetition_penalty", repetition_penalty, 1)):
        if value is not None and value != neutral:
            raise APIError(f"{name} is not supported by this greedy engine; omit it.",
                           param=f"{prefix}{name}")
    if logprobs:
        raise APIError(f"{logprobs_field} is not supported by this engine; omit it.",
                       param=logprobs_field)


def check_unsupported(req: BaseModel, fields: dict[str, Callable[[Any], bool]],
                      prefix: str = "") -> None:
    """400 for the first declared field whose value is not neutral (fields maps a name to
    "this value is neutral"): a field that would change the output is never dropped."""
    for name, neutral in fields.items():
        value = getattr(req, name)
        if not neutral(value):
            raise APIError(f"{prefix}{name} is not supported by this engine; omit it.",
                           param=f"{prefix}{name}", code="unsupported_parameter")


def _unset(value) -> bool:
    return value is None or value == [] or value == {}


def _text_format(value) -> bool:
    return value is None or value.get("type") == "text"


OPENAI_UNSUPPORTED = {"logit_bias": _unset, "response_format": _text_format,
                      "stop_token_ids": _unset}
SAMPLING_UNSUPPORTED = {"stop_token_ids": _unset, "regex": _unset, "json_schema": _unset,
                        "ebnf": _unset, "no_stop_trim": lambda v: not v}
GENERATE_UNSUPPORTED = {"return_hidden_states": lambda v: not v, "lora_path": _unset}


def check_ids(state: ServerState, ids: list[int], param: str) -> None:
    vocab = state.tokenizer.vocab_size
    bad = next((t for t in ids if not 0 <= t < vocab), None)
    if bad is not None:
        raise APIError(f"Token id {bad} in '{param}' is outside the vocabulary (0..{vocab - 1}).",
                       param=param)


def resolve_max_tokens(state: ServerState, prompt_len: int, requested: int | None, *,
                       default: int | None, param: str) -> int:
    ctx = state.context_length
    if prompt_len == 0:
        raise APIError("The prompt is empty; send at least one token.", param="prompt")
    if prompt_len >= ctx:
        raise APIError(f"The prompt is {prompt_len} tokens, which leaves no room in the "
                       f"{ctx}-token context; shorten it.", param="prompt",
                       code="context_length_exceeded")
    room = ctx - prompt_len
    if requested is None:
        return room if default is None else min(default, room)
    if requested < 1:
        raise APIError(f"{param} must be at least 1, got {requested}.", param=param)
    if requested > room:
        raise APIError(f"{param} ({requested}) plus the prompt ({prompt_len} tokens) exceeds "
                       f"the {ctx}-token context; the most it can be is {room}.", param=param,
                       code="context_length_exceeded")
    return requested


def stop_list(stop: str | list[str] | None) -> list[str]:
    if stop is None:
        return []
    return [s for s in ([stop] if isinstance(stop, str) else stop) if s]


def usage(result: JobResult) -> dict:
    return {"prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens}


def sse(obj: Any) -> str:
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


SSE_DONE = "data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def check_openai_request(state: ServerState, req: Any) -> None:
    """The checks both OpenAI endpoints share: the model name and the sampling fields."""
    check_model(state, req.model)
    # Completions' logprobs is a count where 0 still asks for the chosen token's logprob.
    logprobs = req.logprobs is not None if isinstance(req, CompletionRequest) else req.logprobs
    check_sampling(temperature=req.temperature, n=req.n, min_tokens=req.min_tokens,
                   frequency_penalty=req.frequency_penalty,
                   presence_penalty=req.presence_penalty,
                   repetition_penalty=req.repetition_penalty, logprobs=logprobs,
                   top_p=req.top_p, top_k=req.top_k)
    check_unsupported(req, OPENAI_UNSUPPORTED)


def check_chat_options(state: ServerState, req: ChatCompletionRequest) -> None:
    """The chat-only fields that cannot be honoured here are refused, not dropped."""
    if req.top_logprobs:
        raise APIError("top_logprobs is not supported by this engine; omit it.",
                       param="top_logprobs", code="unsupported_parameter")
    if not req.tools or req.tool_choice == "none":
        return
    if not state.args.tool_call_parser:
        raise APIError("tools need a server started with --tool-call-parser; without one "
                       "tool calls are not parsed, so omit tools or set tool_choice 'none'.",
                       param="tools", code="unsupported_parameter")
    if req.tool_choice not in (None, "auto"):
        raise APIError("Only tool_choice 'auto' or 'none' is supported: this engine cannot "
                       "force a tool call.", param="tool_choice", code="unsupported_parameter")


class OpenAIJob(NamedTuple):
    """A submitted OpenAI-style request and the envelope its response needs."""

    runner: Runner
    first: Delta | JobResult
    id: str
    created: int
    model: str
    meta_kw: dict


async def start_openai_job(state: ServerState, request: Request, req: Any, params: GenParams,
                           t0: float, id_prefix: str) -> OpenAIJob | None:
    """Submit an OpenAI-style request and wait for its first event; None when the client
    left first. An engine-side refusal in the first event becomes an HTTP error here."""
    runner = Runner(state, request, params, t0)
    cid = f"{id_prefix}-{uuid.uuid4().hex}"
    created = int(time.time())
    meta_kw = {"commit_lengths": req.return_commit_lengths, "round_stats": req.return_round_stats}
    first = await runner.first()
    if first is None:
        return None
    if isinstance(first, JobResult):
        _check_result(first)
    return OpenAIJob(runner, first, cid, created, state.args.served_model_name, meta_kw)


def _openai_finish(result: JobResult) -> str:
    return result.finish_reason  # "stop" | "length" (abort is turned into an error or SSE end)


def _matched(result: JobResult) -> str | int | None:
    return result.matched_stop if result.finish_reason == "stop" else None


# --------------------------------------------------------------------------------------
# The app
# --------------------------------------------------------------------------------------

def create_app(state: ServerState) -> FastAPI:
    app = FastAPI(title="specengine", version=state.version, docs_url=None, redoc_url=None,
                  openapi_url=None)
    install_error_handlers(app)
    if state.args.api_key:
        app.add_middleware(APIKeyMiddleware, api_key=state.args.api_key)
    app.state.engine = state

    # ---- health and info -----------------------------------------------------------
    @app.get("/health")
    async def health():
        if not state.ready:
            return JSONResponse(error_body("The server is still starting.", status=503),
                                status_code=503)
        return Response(status_code=200)

    @app.get("/health_generate")
    async def health_generate():
        if not state.ready:
            return JSONResponse(error_body("The server is still starting.", status=503),
                                status_code=503)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def done(result):
            if not fut.done():
                fut.set_result(result)
        ids = state.tokenizer.encode("\n") or [0]
        job = Job(GenParams(ids, 1, ignore_eos=True), on_done=_threadsafe(loop, done),
                  rid=f"health-{uuid.uuid4().hex[:8]}", count_in_metrics=False)
        try:
            state.worker.submit(job)
            result = await asyncio.wait_for(fut, HEALTH_GENERATE_TIMEOUT_S)
        except (ShuttingDown, TimeoutError):
            state.worker.cancel(job, "health check timed out")
            return JSONResponse(error_body("The engine did not generate in time.", status=503),
                                status_code=503)
        if result.finish_reason == "abort":
            return JSONResponse(error_body(f"The engine failed to generate ({result.error}).",
                                           status=503), status_code=503)
        return Response(status_code=200)

    def model_card() -> dict:
        return {"id": state.args.served_model_name, "object": "model", "created": state.created,
                "owned_by": "specengine", "root": state.model_path, "parent": None,
                "max_model_len": state.context_length}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str):
        check_model(state, model_id)
        return model_card()

    async def server_info() -> dict:
        info = state.args.public_dict()
        info.update({
            "model_path": state.model_path,
            "speculative_draft_model_path": state.draft_model_path,
            "tokenizer_path": state.model_path,
            "max_total_num_tokens": state.context_length,
            "max_model_len": state.max_model_len,
            "max_running_requests": 1,
            "stream_interval": 1,
            "page_size": 1,
            "version": state.version,
            "status": "ready" if state.ready else "starting",
        })
        # The KV cache is allocated per request and grows in chunks (engine/kvcache.py):
        # its size now (0 when idle), at the context limit, and after the last request.
        info.update(state.worker.decoder.kv_cache_info())
        internal = state.stats.snapshot()
        internal.update({"num_running_reqs": state.worker.running,
                         "num_queue_reqs": state.worker.queue_len,
                         "decode_log_interval": state.args.decode_log_interval})
        info["internal_states"] = [internal]
        return info

    app.get("/get_server_info")(server_info)
    app.get("/server_info")(server_info)

    async def model_info() -> dict:
        return {"model_path": state.model_path, "tokenizer_path": state.model_path,
                "is_generation": True, "draft_model_path": state.draft_model_path,
                "served_model_name": state.args.served_model_name,
                "max_model_len": state.context_length}

    app.get("/get_model_info")(model_info)
    app.get("/model_info")(model_info)

    @app.get("/metrics")
    async def metrics():
        state.metrics.num_queue_reqs.set(state.worker.queue_len)
        return Response(state.metrics.render(), media_type=METRICS_CONTENT_TYPE)

    # ---- tokenizer -------------------------------------------------------------------
    @app.post("/tokenize")
    async def tokenize(request: Request):
        req = parse_body(TokenizeRequest, await read_json(request))
        check_model(state, req.model)
        text = req.prompt if req.prompt is not None else req.text
        if text is None:
            raise APIError("Send the text to tokenize as 'prompt'.", param="prompt")
        ids = state.tokenizer.encode(text, add_special_tokens=req.add_special_tokens)
        return {"tokens": ids, "count": len(ids), "max_model_len": state.context_length}

    @app.post("/detokenize")
    async def detokenize(request: Request):
        req = parse_body(DetokenizeRequest, await read_json(request))
        check_model(state, req.model)
        check_ids(state, req.tokens, "tokens")
        return {"text": state.tokenizer.decode(req.tokens)}

    # ---- OpenAI completions ------------------------------------------------------------
    @app.post("/v1/completions")
    async def completions(request: Request):
        t0 = time.perf_counter()
        req = parse_body(CompletionRequest, await read_json(request))
        check_openai_request(state, req)
        if req.echo:
            raise APIError("echo is not supported; omit it.", param="echo")
        if req.best_of not in (None, 1):
            raise APIError("best_of is not supported by this greedy engine; omit it.",
                           param="best_of")
        if req.suffix:
            raise APIError("suffix is not supported; omit it.", param="suffix")
        ids = completion_prompt_ids(state, req.prompt)
        max_tokens = resolve_max_tokens(state, len(ids), req.max_tokens,
                                        default=COMPLETIONS_DEFAULT_MAX_TOKENS, param="max_tokens")
        params = GenParams(ids, max_tokens, ignore_eos=req.ignore_eos, stop=stop_list(req.stop),
                           stream=req.stream)
        job = await start_openai_job(state, request, req, params, t0, "cmpl")
        if job is None:
            return Response(status_code=499)
        runner, first, cid, created, name, meta_kw = job
        if not req.stream:
            result = first
            choice = {"index": 0, "text": result.text, "logprobs": None,
                      "finish_reason": _openai_finish(result), "matched_stop": _matched(result)}
            body = {"id": cid, "object": "text_completion", "created": created, "model": name,
                    "choices": [choice], "usage": usage(result)}
            if req.return_meta_info:
                meta = result.meta_info(**meta_kw)
                choice["meta_info"] = meta
                body["meta_info"] = meta
            return JSONResponse(body)

        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        continuous = bool(req.stream_options and req.stream_options.continuous_usage_stats)

        def chunk(text: str, finish=None, matched=None, extra=None, usage_obj=None) -> str:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish,
                      "matched_stop": matched}
            if extra:
                choice.update(extra)
            return sse({"id": cid, "object": "text_completion", "created": created,
                        "model": name, "choices": [choice], "usage": usage_obj})

        async def events() -> AsyncIterator[str]:
            event = first
            try:
                while True:
                    if isinstance(event, Delta):
                        u = None
                        if continuous:
                            u = {"prompt_tokens": len(ids), "completion_tokens": event.completion_tokens,
                                 "total_tokens": len(ids) + event.completion_tokens}
                        yield chunk(event.text, usage_obj=u)
                        event = await runner.next()
                        continue
                    result: JobResult = event
                    if result.finish_reason == "abort":
                        yield sse(error_body(f"The request was aborted ({result.error}).",
                                             status=503))
                        yield SSE_DONE
                        return
                    extra = {"meta_info": result.meta_info(**meta_kw)} if req.return_meta_info else None
                    yield chunk("", _openai_finish(result), _matched(result), extra,
                                usage(result) if continuous else None)
                    if include_usage:
                        yield sse({"id": cid, "object": "text_completion", "created": created,
                                   "model": name, "choices": [], "usage": usage(result)})
                    yield SSE_DONE
                    return
            finally:
                runner.cancel()

        return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)

    # ---- OpenAI chat -----------------------------------------------------------------
    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        t0 = time.perf_counter()
        req = parse_body(ChatCompletionRequest, await read_json(request))
        check_openai_request(state, req)
        check_chat_options(state, req)
        try:
            prompt = render_chat([m.model_dump() for m in req.messages])
        except ValueError as e:
            raise APIError(f"Unsupported message content: {e}.", param="messages") from None
        ids = state.tokenizer.encode(prompt)
        requested, param = req.max_completion_tokens, "max_completion_tokens"
        if requested is None:
            requested, param = req.max_tokens, "max_tokens"
        max_tokens = resolve_max_tokens(state, len(ids), requested, default=None, param=param)
        params = GenParams(ids, max_tokens, ignore_eos=req.ignore_eos, stop=stop_list(req.stop),
                           stream=req.stream)
        reasoning = state.args.reasoning_parser if req.separate_reasoning else None
        tools_on = bool(req.tools and req.tool_choice != "none")  # a parser is checked above
        job = await start_openai_job(state, request, req, params, t0, "chatcmpl")
        if job is None:
            return Response(status_code=499)
        runner, first, cid, created, name, meta_kw = job
        if not req.stream:
            result = first
            text = result.text
            reasoning_content = None
            if reasoning:
                reasoning_content, text = split_reasoning(text, reasoning)
            message: dict[str, Any] = {"role": "assistant", "content": text,
                                       "reasoning_content": reasoning_content, "tool_calls": None}
            finish = _openai_finish(result)
            if tools_on:
                content, calls = parse_tool_calls(text)
                if calls:
                    message["content"] = content or None
                    message["tool_calls"] = [c.as_openai() for c in calls]
                    finish = "tool_calls"
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish,
                      "matched_stop": _matched(result)}
            body = {"id": cid, "object": "chat.completion", "created": created, "model": name,
                    "choices": [choice], "usage": usage(result)}
            if req.return_meta_info:
                meta = result.meta_info(**meta_kw)
                choice["meta_info"] = meta
                body["meta_info"] = meta
            return JSONResponse(body)

        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        continuous = bool(req.stream_options and req.stream_options.continuous_usage_stats)

        def chunk(delta: dict, finish=None, extra=None, usage_obj=None) -> str:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            if extra:
                choice.update(extra)
            return sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                        "model": name, "choices": [choice], "usage": usage_obj})

        async def events() -> AsyncIterator[str]:
            rparser = StreamingReasoningParser(reasoning) if reasoning else None
            held = ""          # content withheld because it may be a tool call
            holding = False
            reasoning_held = ""  # all reasoning, when stream_reasoning is false
            event = first
            try:
                yield chunk({"role": "assistant", "content": ""})
                while True:
                    final = isinstance(event, JobResult)
                    text = "" if final else event.text
                    if final and event.finish_reason == "abort":
                        yield sse(error_body(f"The request was aborted ({event.error}).",
                                             status=503))
                        yield SSE_DONE
                        return
                    r_delta, c_delta = (rparser.feed(text, final=final) if rparser
                                        else ("", text))
                    if r_delta and not req.stream_reasoning:
                        reasoning_held += r_delta
                    elif r_delta:
                        yield chunk({"reasoning_content": r_delta})
                    if final and reasoning_held:
                        yield chunk({"reasoning_content": reasoning_held})
                    if tools_on:
                        held += c_delta
                        c_delta = ""
                        if not holding:
                            at = held.find(TOOL_START)
                            if at != -1:
                                c_delta, held, holding = held[:at], held[at:], True
                            elif not final:
                                keep = _prefix_hold(held, TOOL_START)
                                c_delta, held = held[:len(held) - keep], held[len(held) - keep:]
                    if c_delta:
                        u = None
                        if continuous and not final:
                            u = {"prompt_tokens": len(ids),
                                 "completion_tokens": event.completion_tokens,
                                 "total_tokens": len(ids) + event.completion_tokens}
                        yield chunk({"content": c_delta}, usage_obj=u)
                    if not final:
                        event = await runner.next()
                        continue
                    result: JobResult = event
                    finish = _openai_finish(result)
                    if tools_on and held:
                        content, calls = parse_tool_calls(held)
                        if content:
                            yield chunk({"content": content})
                        if calls:
                            yield chunk({"tool_calls": [c.as_openai(i) for i, c in enumerate(calls)]})
                            finish = "tool_calls"
                    extra = {"matched_stop": _matched(result)}
                    if req.return_meta_info:
                        extra["meta_info"] = result.meta_info(**meta_kw)
                    yield chunk({}, finish, extra, usage(result) if continuous else None)
                    if include_usage:
                        yield sse({"id": cid, "object": "chat.completion.chunk",
                                   "created": created, "model": name, "choices": [],
                                   "usage": usage(result)})
                    yield SSE_DONE
                    return
            finally:
                runner.cancel()

        return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)

    # ---- SGLang native -----------------------------------------------------------------
    @app.post("/generate")
    async def generate(request: Request):
        t0 = time.perf_counter()
        req = parse_body(GenerateRequest, await read_json(request))
        sp = req.sampling_params
        check_sampling(temperature=sp.temperature, n=sp.n, min_tokens=sp.min_new_tokens,
                       frequency_penalty=sp.frequency_penalty, presence_penalty=sp.presence_penalty,
                       repetition_penalty=sp.repetition_penalty, logprobs=req.return_logprob,
                       top_p=sp.top_p, top_k=sp.top_k,
                       min_field="sampling_params.min_new_tokens",
                       logprobs_field="return_logprob", prefix="sampling_params.")
        check_unsupported(sp, SAMPLING_UNSUPPORTED, prefix="sampling_params.")
        check_unsupported(req, GENERATE_UNSUPPORTED)
        if (req.text is None) == (req.input_ids is None):
            raise APIError("Send exactly one of 'text' or 'input_ids'.", param="text")
        if req.input_ids is not None:
            ids = list(req.input_ids)
            check_ids(state, ids, "input_ids")
        else:
            ids = state.tokenizer.encode(req.text)
        max_new = resolve_max_tokens(state, len(ids), sp.max_new_tokens,
                                     default=GENERATE_DEFAULT_MAX_NEW_TOKENS,
                                     param="sampling_params.max_new_tokens")
        params = GenParams(ids, max_new, ignore_eos=sp.ignore_eos, stop=stop_list(sp.stop),
                           stream=req.stream, skip_special_tokens=sp.skip_special_tokens)
        runner = Runner(state, request, params, t0)
        if req.rid:
            runner.job.rid = req.rid
        meta_kw = {"commit_lengths": req.return_commit_lengths,
                   "round_stats": req.return_round_stats}
        first = await runner.first()
        if first is None:
            return Response(status_code=499)
        if isinstance(first, JobResult):
            _check_result(first)
        if not req.stream:
            result = first
            return JSONResponse({"text": result.text, "output_ids": result.output_ids,
                                 "meta_info": result.meta_info(**meta_kw)})

        async def events() -> AsyncIterator[str]:
            text = ""
            event = first
            try:
                while isinstance(event, Delta):
                    text += event.text
                    yield sse({"text": text, "meta_info": {
                        "id": runner.job.rid, "finish_reason": None, "prompt_tokens": len(ids),
                        "completion_tokens": event.completion_tokens,
                        "spec_verify_ct": event.verify_ct, "cached_tokens": 0}})
                    event = await runner.next()
                result: JobResult = event
                if result.finish_reason == "abort":
                    yield sse(error_body(f"The request was aborted ({result.error}).", status=503))
                else:
                    yield sse({"text": result.text, "output_ids": result.output_ids,
                               "meta_info": result.meta_info(**meta_kw)})
                yield SSE_DONE
            finally:
                runner.cancel()

        return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)

    return app


def _prefix_hold(text: str, tag: str) -> int:
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def completion_prompt_ids(state: ServerState, prompt) -> list[int]:
    if isinstance(prompt, str):
        return state.tokenizer.encode(prompt)
    if not prompt:
        raise APIError("The prompt is empty; send at least one token.", param="prompt")
    if isinstance(prompt[0], int):
        check_ids(state, prompt, "prompt")
        return list(prompt)
    if len(prompt) != 1:
        raise APIError(f"Batched prompts ({len(prompt)}) are not supported; send one prompt "
                       f"per request.", param="prompt")
    only = prompt[0]
    if isinstance(only, str):
        return state.tokenizer.encode(only)
    check_ids(state, only, "prompt")
    return list(only)


# --------------------------------------------------------------------------------------
# Process: load, listen, serve, shut down
# --------------------------------------------------------------------------------------

def build_state(args: ServeArgs, bundle, decoder) -> ServerState:
    metrics = ServerMetrics(args.served_model_name)
    stats = DecodeStats(metrics, interval=args.decode_log_interval,
                        context_length=args.context_length,
                        block_size=args.speculative_num_draft_tokens,
                        speculative=args.speculative)
    tok = bundle.tokenizer
    worker = EngineWorker(decoder, tok, metrics=metrics, stats=stats,
                          eos_token_ids=(tok.eos_token_id,))
    return ServerState(args=args, tokenizer=tok, worker=worker, metrics=metrics, stats=stats,
                       model_path=str(bundle.model_path),
                       draft_model_path=str(bundle.draft_model_path) if bundle.draft_model_path else None,
                       max_model_len=bundle.max_context)


def load_engine(args: ServeArgs):
    """Load the weights and build the decoder; exits with one sentence on any problem."""
    import torch

    from engine.checkpoint import WeightsError, load_bundle
    from engine.decode import Decoder

    logger.info("Load weight begin. model=%s, draft=%s, device=%s, dtype=%s",
                args.model_path, args.speculative_draft_model_path, args.device, args.dtype)
    t = time.perf_counter()
    try:
        bundle = load_bundle(args.model_path, args.speculative_draft_model_path,
                             device=args.device, dtype=args.dtype,
                             load_drafter=args.speculative, on_shard=ShardProgress())
    except WeightsError as e:
        fail(str(e))
    except (OSError, RuntimeError, ValueError) as e:
        fail(f"could not load the weights: {e}")
    n_params = sum(p.numel() for p in bundle.target.parameters())
    logger.info("Load weight end. type=%s, dtype=%s, params=%.2fM, elapsed=%.2f s",
                type(bundle.target).__name__, next(bundle.target.parameters()).dtype,
                n_params / 1e6, time.perf_counter() - t)
    try:
        check_against_bundle(args, max_context=bundle.max_context, block_size=bundle.block_size)
        decoder = Decoder(bundle.target, bundle.drafter if args.speculative else None,
                          method=args.method, budget=args.speculative_ddtree_budget,
                          block_size=args.speculative_num_draft_tokens,
                          draft_window=args.speculative_draft_window_size,
                          max_context=args.context_length)
    except (ServeArgsError, ValueError) as e:
        fail(str(e))
    del torch
    return bundle, decoder


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio only turns Nagle off (TCP_NODELAY) on accepted sockets whose
    # proto says TCP. With Nagle on, a JSON body written after its headers waited for the
    # client's delayed ACK, about 40 ms per response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        fail(f"cannot listen on {host}:{port} ({e.strerror or e})")
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _uvicorn_server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn that aborts the engine on SIGTERM/SIGINT and then exits 0.

        Stock uvicorn re-raises the captured signal after a graceful shutdown, which makes the
        process die *by* SIGTERM (exit 143); a service manager should see a clean exit.
        """

        on_exit: Callable[[], None] = staticmethod(lambda: None)

        def handle_exit(self, sig, frame) -> None:
            if not self.should_exit:
                logger.info("Received signal %d; aborting the running request and shutting down.", sig)
                # Not from the signal handler itself: the handler may interrupt code that holds
                # the worker's lock.
                threading.Thread(target=self.on_exit, name="shutdown", daemon=True).start()
            super().handle_exit(sig, frame)
            self._captured_signals.clear()

    return Server


def _announce_ready(state: ServerState, server, args: ServeArgs) -> None:
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.02)
    host = f"[{args.host}]" if ":" in args.host else args.host
    logger.info("Uvicorn running on http://%s:%d (Press CTRL+C to quit)", host, args.port)
    if not args.skip_server_warmup:
        done = threading.Event()
        results: list[JobResult] = []
        tok = state.tokenizer
        warm_ids = (tok.encode("def main():\n") or [0])[: max(1, state.context_length // 2)]
        n = max(1, min(8, state.context_length - len(warm_ids)))

        def finished(result: JobResult) -> None:
            results.append(result)
            done.set()
        job = Job(GenParams(warm_ids, n, ignore_eos=True), on_done=finished, rid="warmup",
                  count_in_metrics=False)
        try:
            state.worker.submit(job)
        except ShuttingDown:
            return
        done.wait(300)
        if not results or (results[0].finish_reason == "abort" and not server.should_exit):
            # Like SGLang: a server that cannot generate must not report ready.
            state.startup_error = ("the warmup generation failed ("
                                   f"{results[0].error if results else 'timed out'})")
            logger.error("Warmup failed: %s", state.startup_error)
            server.should_exit = True
            return
    if server.should_exit:
        return
    state.ready = True
    logger.info(READY_MESSAGE)


def serve(args: ServeArgs) -> int:
    import uvicorn

    setup_logging(args.log_level)
    for w in args.warnings:
        logger.warning(w)
    logger.info("server_args=%s", args.public_dict())
    bundle, decoder = load_engine(args)
    sock = bind_socket(args.host, args.port)
    state = build_state(args, bundle, decoder)
    app = create_app(state)
    state.worker.start()
    config = uvicorn.Config(app, log_config=None, access_log=True, lifespan="off",
                            timeout_graceful_shutdown=5, timeout_keep_alive=5,
                            log_level=args.log_level)
    server = _uvicorn_server_class()(config)
    server.on_exit = lambda: state.worker.shutdown(abort=True)
    threading.Thread(target=_announce_ready, args=(state, server, args), name="warmup",
                     daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        state.worker.shutdown(abort=True)
        state.worker.join(5)
    logger.info("Server stopped.")
    if state.startup_error:
        fail(state.startup_error)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_serve_args(argv)
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
