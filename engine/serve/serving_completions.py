"""OpenAI's `/v1/completions`: a prompt (text or token ids, a batch of exactly one) in,
text out, as one body or an SSE stream."""

from __future__ import annotations

from collections.abc import AsyncIterator

from engine.serve.checks import check_ids, resolve_max_tokens, stop_list
from engine.serve.errors import APIError
from engine.serve.generation import SSE_DONE, sse_aborted
from engine.serve.protocol import CompletionRequest
from engine.serve.serving_openai import (
    OpenAIEndpoint,
    OpenAIGeneration,
    check_openai_request,
    finish_reason,
    matched_stop,
    usage,
    usage_so_far,
)
from engine.serve.state import ServerState
from engine.serve.worker import Delta, GenParams, JobResult

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI / vLLM / SGLang default for /v1/completions


class ServingCompletions(OpenAIEndpoint):
    body_model = CompletionRequest
    id_prefix = "cmpl"
    object = "text_completion"
    chunk_object = "text_completion"

    def prepare(self, state: ServerState, body: CompletionRequest) -> OpenAIGeneration:
        sampling = check_openai_request(state, body)
        if body.echo:
            raise APIError("echo is not supported; omit it.", param="echo")
        if body.best_of not in (None, 1):
            raise APIError("best_of is not supported by this engine; omit it.", param="best_of")
        if body.suffix:
            raise APIError("suffix is not supported; omit it.", param="suffix")
        ids = completion_prompt_ids(state, body.prompt)
        max_tokens = resolve_max_tokens(
            state,
            len(ids),
            body.max_tokens,
            default=COMPLETIONS_DEFAULT_MAX_TOKENS,
            param="max_tokens",
        )
        params = GenParams(
            ids,
            max_tokens,
            ignore_eos=body.ignore_eos,
            stop=stop_list(body.stop),
            stream=body.stream,
            sampling=sampling,
        )
        return self.generation(state, body, params)

    def response(self, gen: OpenAIGeneration, result: JobResult) -> dict:
        choice = {
            "index": 0,
            "text": result.text,
            "logprobs": None,
            "finish_reason": finish_reason(result),
            "matched_stop": matched_stop(result),
        }
        return self.body(gen, choice, result)

    async def stream(self, gen: OpenAIGeneration) -> AsyncIterator[str]:
        async for event in gen.events():
            if isinstance(event, Delta):
                u = usage_so_far(gen, event) if gen.continuous_usage else None
                yield self._text_chunk(gen, event.text, usage_obj=u)
            elif event.finish_reason == "abort":
                yield sse_aborted(event)
            else:
                yield self._last_chunk(gen, event)
                if gen.include_usage:
                    yield self.usage_chunk(gen, event)
        yield SSE_DONE

    def _text_chunk(
        self,
        gen: OpenAIGeneration,
        text: str,
        finish=None,
        matched=None,
        extra=None,
        usage_obj=None,
    ) -> str:
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": finish,
            "matched_stop": matched,
        }
        if extra:
            choice.update(extra)
        return self.chunk(gen, [choice], usage_obj)

    def _last_chunk(self, gen: OpenAIGeneration, result: JobResult) -> str:
        """The empty-text chunk with the finish reason (and meta_info when asked)."""
        extra = {"meta_info": gen.meta_info(result)} if gen.body.return_meta_info else None
        return self._text_chunk(
            gen,
            "",
            finish_reason(result),
            matched_stop(result),
            extra,
            usage(result) if gen.continuous_usage else None,
        )


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
