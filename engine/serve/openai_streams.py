"""The SSE streams of the OpenAI endpoints (`"stream": true`).

Each stream starts from the job's first event (already awaited by the handler) and
cancels the job however it ends, so a client that disconnects mid-stream frees the
engine at the next verify round.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from engine.serve.chat_parsing import TOOL_START, StreamingReasoningParser, parse_tool_calls
from engine.serve.errors import error_body
from engine.serve.openai_common import OpenAIJob, finish_reason, matched_stop, usage
from engine.serve.protocol import ChatCompletionRequest, CompletionRequest
from engine.serve.sse import SSE_DONE, sse
from engine.serve.text import partial_tag_len
from engine.serve.worker import Delta, JobResult


def _usage_so_far(prompt_tokens: int, event: Delta) -> dict:
    # stream_options.continuous_usage_stats: usage on every chunk, not only the last.
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": event.completion_tokens,
        "total_tokens": prompt_tokens + event.completion_tokens,
    }


async def completion_events(
    job: OpenAIJob, req: CompletionRequest, prompt_tokens: int
) -> AsyncIterator[str]:
    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    continuous = bool(req.stream_options and req.stream_options.continuous_usage_stats)

    def chunk(text: str, finish=None, matched=None, extra=None, usage_obj=None) -> str:
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": finish,
            "matched_stop": matched,
        }
        if extra:
            choice.update(extra)
        return sse(
            {
                "id": job.id,
                "object": "text_completion",
                "created": job.created,
                "model": job.model,
                "choices": [choice],
                "usage": usage_obj,
            }
        )

    runner, event = job.runner, job.first
    try:
        while True:
            if isinstance(event, Delta):
                u = _usage_so_far(prompt_tokens, event) if continuous else None
                yield chunk(event.text, usage_obj=u)
                event = await runner.next()
                continue
            result: JobResult = event
            if result.finish_reason == "abort":
                yield sse(error_body(f"The request was aborted ({result.error}).", status=503))
                yield SSE_DONE
                return
            extra = {"meta_info": result.meta_info(**job.meta_kw)} if req.return_meta_info else None
            yield chunk(
                "",
                finish_reason(result),
                matched_stop(result),
                extra,
                usage(result) if continuous else None,
            )
            if include_usage:
                yield usage_chunk(job, "text_completion", result)
            yield SSE_DONE
            return
    finally:
        runner.cancel()


def usage_chunk(job, obj: str, result) -> str:
    """The final usage-only event `stream_options.include_usage` asks for (no choices)."""
    return sse(
        {
            "id": job.id,
            "object": obj,
            "created": job.created,
            "model": job.model,
            "choices": [],
            "usage": usage(result),
        }
    )


async def chat_events(
    job: OpenAIJob,
    req: ChatCompletionRequest,
    prompt_tokens: int,
    reasoning: str | None,
    tools_on: bool,
) -> AsyncIterator[str]:
    """Chat deltas: reasoning split off as it streams (`--reasoning-parser`), and content
    from the first `<tool_call>` on held back until the end, when it is parsed into
    tool_calls (a tag split across deltas is held too, so it never leaks as content)."""
    include_usage = bool(req.stream_options and req.stream_options.include_usage)
    continuous = bool(req.stream_options and req.stream_options.continuous_usage_stats)

    def chunk(delta: dict, finish=None, extra=None, usage_obj=None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        if extra:
            choice.update(extra)
        return sse(
            {
                "id": job.id,
                "object": "chat.completion.chunk",
                "created": job.created,
                "model": job.model,
                "choices": [choice],
                "usage": usage_obj,
            }
        )

    rparser = StreamingReasoningParser(reasoning) if reasoning else None
    held = ""  # content withheld because it may be a tool call
    holding = False
    reasoning_held = ""  # all reasoning, when stream_reasoning is false
    runner, event = job.runner, job.first
    try:
        yield chunk({"role": "assistant", "content": ""})
        while True:
            final = isinstance(event, JobResult)
            text = "" if final else event.text
            if final and event.finish_reason == "abort":
                yield sse(error_body(f"The request was aborted ({event.error}).", status=503))
                yield SSE_DONE
                return
            r_delta, c_delta = rparser.feed(text, final=final) if rparser else ("", text)
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
                        keep = partial_tag_len(held, TOOL_START)
                        c_delta, held = held[: len(held) - keep], held[len(held) - keep :]
            if c_delta:
                u = _usage_so_far(prompt_tokens, event) if continuous and not final else None
                yield chunk({"content": c_delta}, usage_obj=u)
            if not final:
                event = await runner.next()
                continue
            result: JobResult = event
            finish = finish_reason(result)
            if tools_on and held:
                content, calls = parse_tool_calls(held)
                if content:
                    yield chunk({"content": content})
                if calls:
                    yield chunk({"tool_calls": [c.as_openai(i) for i, c in enumerate(calls)]})
                    finish = "tool_calls"
            extra = {"matched_stop": matched_stop(result)}
            if req.return_meta_info:
                extra["meta_info"] = result.meta_info(**job.meta_kw)
            yield chunk({}, finish, extra, usage(result) if continuous else None)
            if include_usage:
                yield usage_chunk(job, "chat.completion.chunk", result)
            yield SSE_DONE
            return
    finally:
        runner.cancel()
