"""What the two OpenAI completion endpoints share: request checks, submitting the job, and
the pieces of the response envelope (id, finish reason, usage)."""

from __future__ import annotations

import time
import uuid
from typing import Any, NamedTuple

from fastapi import Request

from engine.serve.checks import OPENAI_UNSUPPORTED, check_model, check_sampling, check_unsupported
from engine.serve.jobs import Runner, check_result
from engine.serve.protocol import CompletionRequest
from engine.serve.state import ServerState
from engine.serve.worker import Delta, GenParams, JobResult


def check_openai_request(state: ServerState, req: Any) -> None:
    """The checks both OpenAI endpoints share: the model name and the sampling fields."""
    check_model(state, req.model)
    # Completions' logprobs is a count where 0 still asks for the chosen token's logprob.
    logprobs = req.logprobs is not None if isinstance(req, CompletionRequest) else req.logprobs
    check_sampling(
        temperature=req.temperature,
        n=req.n,
        min_tokens=req.min_tokens,
        frequency_penalty=req.frequency_penalty,
        presence_penalty=req.presence_penalty,
        repetition_penalty=req.repetition_penalty,
        logprobs=logprobs,
        top_p=req.top_p,
        top_k=req.top_k,
    )
    check_unsupported(req, OPENAI_UNSUPPORTED)


class OpenAIJob(NamedTuple):
    """A submitted OpenAI-style request and the envelope its response needs."""

    runner: Runner
    first: Delta | JobResult
    id: str
    created: int
    model: str
    meta_kw: dict


async def start_openai_job(
    state: ServerState, request: Request, req: Any, params: GenParams, t0: float, id_prefix: str
) -> OpenAIJob | None:
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
        check_result(first)
    return OpenAIJob(runner, first, cid, created, state.args.served_model_name, meta_kw)


def finish_reason(result: JobResult) -> str:
    return result.finish_reason  # "stop" | "length" (abort is turned into an error or SSE end)


def matched_stop(result: JobResult) -> str | int | None:
    return result.matched_stop if result.finish_reason == "stop" else None


def usage(result: JobResult) -> dict:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }
