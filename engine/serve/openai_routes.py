"""OpenAI-compatible endpoints: /v1/models, /v1/completions and /v1/chat/completions.

A handler checks the request, submits it (engine/serve/jobs.py) and answers either one
JSON body or an SSE stream (engine/serve/openai_streams.py).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from engine.serve.chat_parsing import parse_tool_calls, render_chat, split_reasoning
from engine.serve.checks import check_ids, check_model, resolve_max_tokens, stop_list
from engine.serve.errors import APIError
from engine.serve.openai_common import (
    check_openai_request,
    finish_reason,
    matched_stop,
    start_openai_job,
    usage,
)
from engine.serve.openai_streams import chat_events, completion_events
from engine.serve.protocol import ChatCompletionRequest, CompletionRequest
from engine.serve.request_body import parse_body, read_json
from engine.serve.sse import event_stream
from engine.serve.state import ServerState, engine_state
from engine.serve.worker import GenParams

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI / vLLM / SGLang default for /v1/completions

router = APIRouter()


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


# ---- /v1/completions -------------------------------------------------------------------


@router.post("/v1/completions")
async def completions(request: Request):
    t0 = time.perf_counter()
    state = engine_state(request)
    req = parse_body(CompletionRequest, await read_json(request))
    check_openai_request(state, req)
    if req.echo:
        raise APIError("echo is not supported; omit it.", param="echo")
    if req.best_of not in (None, 1):
        raise APIError("best_of is not supported by this greedy engine; omit it.", param="best_of")
    if req.suffix:
        raise APIError("suffix is not supported; omit it.", param="suffix")
    ids = completion_prompt_ids(state, req.prompt)
    max_tokens = resolve_max_tokens(
        state, len(ids), req.max_tokens, default=COMPLETIONS_DEFAULT_MAX_TOKENS, param="max_tokens"
    )
    params = GenParams(
        ids, max_tokens, ignore_eos=req.ignore_eos, stop=stop_list(req.stop), stream=req.stream
    )
    job = await start_openai_job(state, request, req, params, t0, "cmpl")
    if job is None:
        return Response(status_code=499)
    if req.stream:
        return event_stream(completion_events(job, req, len(ids)))
    result = job.first
    choice = {
        "index": 0,
        "text": result.text,
        "logprobs": None,
        "finish_reason": finish_reason(result),
        "matched_stop": matched_stop(result),
    }
    body = {
        "id": job.id,
        "object": "text_completion",
        "created": job.created,
        "model": job.model,
        "choices": [choice],
        "usage": usage(result),
    }
    if req.return_meta_info:
        meta = result.meta_info(**job.meta_kw)
        choice["meta_info"] = meta
        body["meta_info"] = meta
    return JSONResponse(body)


def completion_prompt_ids(state: ServerState, prompt) -> list[int]:
    """Token ids of a completions prompt: text, ids, or a batch of exactly one of either."""
    if isinstance(prompt, str):
        return state.tokenizer.encode(prompt)
    if not prompt:
        raise APIError("The prompt is empty; send at least one token.", param="prompt")
    if isinstance(prompt[0], int):
        check_ids(state, prompt, "prompt")
        return list(prompt)
    if len(prompt) != 1:
        raise APIError(
            f"Batched prompts ({len(prompt)}) are not supported; send one prompt per request.",
            param="prompt",
        )
    only = prompt[0]
    if isinstance(only, str):
        return state.tokenizer.encode(only)
    check_ids(state, only, "prompt")
    return list(only)


# ---- /v1/chat/completions --------------------------------------------------------------


@router.post("/v1/chat/completions")
async def chat(request: Request):
    t0 = time.perf_counter()
    state = engine_state(request)
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
    params = GenParams(
        ids, max_tokens, ignore_eos=req.ignore_eos, stop=stop_list(req.stop), stream=req.stream
    )
    reasoning = state.args.reasoning_parser if req.separate_reasoning else None
    tools_on = bool(req.tools and req.tool_choice != "none")  # a parser is checked above
    job = await start_openai_job(state, request, req, params, t0, "chatcmpl")
    if job is None:
        return Response(status_code=499)
    if req.stream:
        return event_stream(chat_events(job, req, len(ids), reasoning, tools_on))
    result = job.first
    text = result.text
    reasoning_content = None
    if reasoning:
        reasoning_content, text = split_reasoning(text, reasoning)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text,
        "reasoning_content": reasoning_content,
        "tool_calls": None,
    }
    finish = finish_reason(result)
    if tools_on:
        content, calls = parse_tool_calls(text)
        if calls:
            message["content"] = content or None
            message["tool_calls"] = [c.as_openai() for c in calls]
            finish = "tool_calls"
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": finish,
        "matched_stop": matched_stop(result),
    }
    body = {
        "id": job.id,
        "object": "chat.completion",
        "created": job.created,
        "model": job.model,
        "choices": [choice],
        "usage": usage(result),
    }
    if req.return_meta_info:
        meta = result.meta_info(**job.meta_kw)
        choice["meta_info"] = meta
        body["meta_info"] = meta
    return JSONResponse(body)


def check_chat_options(state: ServerState, req: ChatCompletionRequest) -> None:
    """The chat-only fields that cannot be honoured here are refused, not dropped."""
    if req.top_logprobs:
        raise APIError(
            "top_logprobs is not supported by this engine; omit it.",
            param="top_logprobs",
            code="unsupported_parameter",
        )
    if not req.tools or req.tool_choice == "none":
        return
    if not state.args.tool_call_parser:
        raise APIError(
            "tools need a server started with --tool-call-parser; without one "
            "tool calls are not parsed, so omit tools or set tool_choice 'none'.",
            param="tools",
            code="unsupported_parameter",
        )
    if req.tool_choice not in (None, "auto"):
        raise APIError(
            "Only tool_choice 'auto' or 'none' is supported: this engine cannot force a tool call.",
            param="tool_choice",
            code="unsupported_parameter",
        )
