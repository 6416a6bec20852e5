"""The HTTP app (SGLang's http_server): the API-key check, the error shape, and every
route; what every handler reads is engine/serve/state.py.

Routes that only read the server (health, info, metrics, the tokenizer, models) are
written here; the three that generate (`/generate`, `/v1/completions`,
`/v1/chat/completions`) hand the request to their serving_* endpoint, which all share one
request path (engine/serve/generation.py).
"""

from __future__ import annotations

import asyncio
import hmac
import uuid

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response

from engine.serve.checks import check_ids, check_model
from engine.serve.errors import APIError, error_body, install_error_handlers
from engine.serve.generation import threadsafe
from engine.serve.metrics import METRICS_CONTENT_TYPE
from engine.serve.protocol import DetokenizeRequest, TokenizeRequest
from engine.serve.request_body import parse_body, read_json
from engine.serve.serving_chat import ServingChat
from engine.serve.serving_completions import ServingCompletions
from engine.serve.serving_generate import ServingGenerate
from engine.serve.state import ServerState, engine_state
from engine.serve.worker import GenParams, Job, ShuttingDown

HEALTH_GENERATE_TIMEOUT_S = 20.0  # SGLang's SGLANG_HEALTH_CHECK_TIMEOUT default

router = APIRouter()


def create_app(state: ServerState) -> FastAPI:
    app = FastAPI(
        title="specengine", version=state.version, docs_url=None, redoc_url=None, openapi_url=None
    )
    install_error_handlers(app)
    if state.args.api_key:
        app.add_middleware(APIKeyMiddleware, api_key=state.args.api_key)
    app.state.engine = state
    app.include_router(router)
    return app


# ---- the API key -----------------------------------------------------------------------

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


# ---- generation ------------------------------------------------------------------------

GENERATE = ServingGenerate()
COMPLETIONS = ServingCompletions()
CHAT = ServingChat()


@router.post("/generate")
async def generate(request: Request):
    return await GENERATE.handle(request, engine_state(request))


@router.post("/v1/completions")
async def completions(request: Request):
    return await COMPLETIONS.handle(request, engine_state(request))


@router.post("/v1/chat/completions")
async def chat(request: Request):
    return await CHAT.handle(request, engine_state(request))


# ---- models ----------------------------------------------------------------------------


def model_card(state: ServerState) -> dict:
    return {
        "id": state.args.served_model_name,
        "object": "model",
        "created": state.created,
        "owned_by": "specengine",
        "root": state.model_path,
        "parent": None,
        "max_model_len": state.context_length,
    }


@router.get("/v1/models")
async def models(request: Request):
    return {"object": "list", "data": [model_card(engine_state(request))]}


@router.get("/v1/models/{model_id:path}")
async def model(request: Request, model_id: str):
    state = engine_state(request)
    check_model(state, model_id)
    return model_card(state)


# ---- health and info -------------------------------------------------------------------


def _starting() -> JSONResponse:
    return JSONResponse(error_body("The server is still starting.", status=503), status_code=503)


@router.get("/health")
async def health(request: Request):
    if not engine_state(request).ready:
        return _starting()
    return Response(status_code=200)


@router.get("/health_generate")
async def health_generate(request: Request):
    """Ready and able to generate: one token through the engine thread, with a timeout."""
    state = engine_state(request)
    if not state.ready:
        return _starting()
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def done(result):
        if not fut.done():
            fut.set_result(result)

    ids = state.tokenizer.encode("\n") or [0]
    job = Job(
        GenParams(ids, 1, ignore_eos=True),
        on_done=threadsafe(loop, done),
        rid=f"health-{uuid.uuid4().hex[:8]}",
        count_in_metrics=False,
    )
    try:
        state.worker.submit(job)
        result = await asyncio.wait_for(fut, HEALTH_GENERATE_TIMEOUT_S)
    except (ShuttingDown, TimeoutError):
        state.worker.cancel(job, "health check timed out")
        return JSONResponse(
            error_body("The engine did not generate in time.", status=503), status_code=503
        )
    if result.finish_reason == "abort":
        return JSONResponse(
            error_body(f"The engine failed to generate ({result.error}).", status=503),
            status_code=503,
        )
    return Response(status_code=200)


@router.get("/get_server_info")
@router.get("/server_info")
async def server_info(request: Request) -> dict:
    state = engine_state(request)
    info = state.args.public_dict()
    info.update(
        {
            "model_path": state.model_path,
            "speculative_draft_model_path": state.draft_model_path,
            "tokenizer_path": state.model_path,
            "max_total_num_tokens": state.context_length * state.args.max_running_requests,
            "max_model_len": state.max_model_len,
            "max_running_requests": state.args.max_running_requests,
            "stream_interval": 1,
            "page_size": 1,
            "version": state.version,
            "status": "ready" if state.ready else "starting",
        }
    )
    # The KV cache is allocated per request and grows in chunks (engine/kvcache.py):
    # its size now (0 when idle), at the context limit, and after the last request.
    info.update(state.worker.kv_cache_info())
    internal = state.counters.snapshot()
    internal.update(
        {
            "num_running_reqs": state.worker.running,
            "num_queue_reqs": state.worker.queue_len,
            "decode_log_interval": state.args.decode_log_interval,
        }
    )
    info["internal_states"] = [internal]
    return info


@router.get("/get_model_info")
@router.get("/model_info")
async def model_info(request: Request) -> dict:
    state = engine_state(request)
    return {
        "model_path": state.model_path,
        "tokenizer_path": state.model_path,
        "is_generation": True,
        "draft_model_path": state.draft_model_path,
        "served_model_name": state.args.served_model_name,
        "max_model_len": state.context_length,
    }


@router.get("/metrics")
async def metrics(request: Request):
    state = engine_state(request)
    state.metrics.num_queue_reqs.set(state.worker.queue_len)
    return Response(state.metrics.render(), media_type=METRICS_CONTENT_TYPE)


# ---- tokenizer -------------------------------------------------------------------------


@router.post("/tokenize")
async def tokenize(request: Request):
    state = engine_state(request)
    req = parse_body(TokenizeRequest, await read_json(request))
    check_model(state, req.model)
    text = req.prompt if req.prompt is not None else req.text
    if text is None:
        raise APIError("Send the text to tokenize as 'prompt'.", param="prompt")
    ids = state.tokenizer.encode(text, add_special_tokens=req.add_special_tokens)
    return {"tokens": ids, "count": len(ids), "max_model_len": state.context_length}


@router.post("/detokenize")
async def detokenize(request: Request):
    state = engine_state(request)
    req = parse_body(DetokenizeRequest, await read_json(request))
    check_model(state, req.model)
    check_ids(state, req.tokens, "tokens")
    return {"text": state.tokenizer.decode(req.tokens)}
