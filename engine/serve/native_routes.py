"""SGLang-compatible endpoints: health, server and model info, metrics, the tokenizer, and
`/generate` with `meta_info` always in the response."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from engine.serve.checks import (
    GENERATE_UNSUPPORTED,
    SAMPLING_UNSUPPORTED,
    check_ids,
    check_model,
    check_sampling,
    check_unsupported,
    resolve_max_tokens,
    stop_list,
)
from engine.serve.errors import APIError, error_body
from engine.serve.jobs import Runner, check_result, threadsafe
from engine.serve.metrics import METRICS_CONTENT_TYPE
from engine.serve.protocol import DetokenizeRequest, GenerateRequest, TokenizeRequest
from engine.serve.request_body import parse_body, read_json
from engine.serve.sse import SSE_DONE, event_stream, sse
from engine.serve.state import engine_state
from engine.serve.worker import Delta, GenParams, Job, JobResult, ShuttingDown

GENERATE_DEFAULT_MAX_NEW_TOKENS = 128  # SGLang's SamplingParams default
HEALTH_GENERATE_TIMEOUT_S = 20.0  # SGLang's SGLANG_HEALTH_CHECK_TIMEOUT default

router = APIRouter()


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
            "max_total_num_tokens": state.context_length,
            "max_model_len": state.max_model_len,
            "max_running_requests": 1,
            "stream_interval": 1,
            "page_size": 1,
            "version": state.version,
            "status": "ready" if state.ready else "starting",
        }
    )
    # The KV cache is allocated per request and grows in chunks (engine/kvcache.py):
    # its size now (0 when idle), at the context limit, and after the last request.
    info.update(state.worker.decoder.kv_cache_info())
    internal = state.stats.snapshot()
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


# ---- /generate -------------------------------------------------------------------------


@router.post("/generate")
async def generate(request: Request):
    t0 = time.perf_counter()
    state = engine_state(request)
    req = parse_body(GenerateRequest, await read_json(request))
    sp = req.sampling_params
    check_sampling(
        temperature=sp.temperature,
        n=sp.n,
        min_tokens=sp.min_new_tokens,
        frequency_penalty=sp.frequency_penalty,
        presence_penalty=sp.presence_penalty,
        repetition_penalty=sp.repetition_penalty,
        logprobs=req.return_logprob,
        top_p=sp.top_p,
        top_k=sp.top_k,
        min_field="sampling_params.min_new_tokens",
        logprobs_field="return_logprob",
        prefix="sampling_params.",
    )
    check_unsupported(sp, SAMPLING_UNSUPPORTED, prefix="sampling_params.")
    check_unsupported(req, GENERATE_UNSUPPORTED)
    if (req.text is None) == (req.input_ids is None):
        raise APIError("Send exactly one of 'text' or 'input_ids'.", param="text")
    if req.input_ids is not None:
        ids = list(req.input_ids)
        check_ids(state, ids, "input_ids")
    else:
        ids = state.tokenizer.encode(req.text)
    max_new = resolve_max_tokens(
        state,
        len(ids),
        sp.max_new_tokens,
        default=GENERATE_DEFAULT_MAX_NEW_TOKENS,
        param="sampling_params.max_new_tokens",
    )
    params = GenParams(
        ids,
        max_new,
        ignore_eos=sp.ignore_eos,
        stop=stop_list(sp.stop),
        stream=req.stream,
        skip_special_tokens=sp.skip_special_tokens,
    )
    runner = Runner(state, request, params, t0)
    if req.rid:
        runner.job.rid = req.rid
    meta_kw = {"commit_lengths": req.return_commit_lengths, "round_stats": req.return_round_stats}
    first = await runner.first()
    if first is None:
        return Response(status_code=499)
    if isinstance(first, JobResult):
        check_result(first)
    if not req.stream:
        result = first
        return JSONResponse(
            {
                "text": result.text,
                "output_ids": result.output_ids,
                "meta_info": result.meta_info(**meta_kw),
            }
        )
    return event_stream(generate_events(runner, first, len(ids), meta_kw))


async def generate_events(
    runner: Runner, first: Delta | JobResult, prompt_tokens: int, meta_kw: dict
) -> AsyncIterator[str]:
    """SGLang's stream: each event carries the whole text so far; the last one is the
    non-streaming response body."""
    text = ""
    event = first
    try:
        while isinstance(event, Delta):
            text += event.text
            yield sse(
                {
                    "text": text,
                    "meta_info": {
                        "id": runner.job.rid,
                        "finish_reason": None,
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": event.completion_tokens,
                        "spec_verify_ct": event.verify_ct,
                        "cached_tokens": 0,
                    },
                }
            )
            event = await runner.next()
        result: JobResult = event
        if result.finish_reason == "abort":
            yield sse(error_body(f"The request was aborted ({result.error}).", status=503))
        else:
            yield sse(
                {
                    "text": result.text,
                    "output_ids": result.output_ids,
                    "meta_info": result.meta_info(**meta_kw),
                }
            )
        yield SSE_DONE
    finally:
        runner.cancel()
