"""SGLang's native `/generate`: text or token ids in, `meta_info` always in the response."""

from __future__ import annotations

from collections.abc import AsyncIterator

from engine.serve.checks import (
    GENERATE_UNSUPPORTED,
    SAMPLING_UNSUPPORTED,
    check_ids,
    check_sampling,
    check_unsupported,
    resolve_max_tokens,
    stop_list,
)
from engine.serve.errors import APIError
from engine.serve.generation import SSE_DONE, Generation, GenerationEndpoint, sse, sse_aborted
from engine.serve.protocol import GenerateRequest
from engine.serve.state import ServerState
from engine.serve.worker import Delta, GenParams, JobResult

GENERATE_DEFAULT_MAX_NEW_TOKENS = 128  # SGLang's SamplingParams default


class ServingGenerate(GenerationEndpoint):
    body_model = GenerateRequest

    def prepare(self, state: ServerState, body: GenerateRequest) -> Generation:
        sp = body.sampling_params
        if sp.seed is not None and sp.sampling_seed is not None and sp.seed != sp.sampling_seed:
            raise APIError(
                "sampling_params.seed and sampling_params.sampling_seed disagree; send one.",
                param="sampling_params.seed",
            )
        sampling = check_sampling(
            temperature=sp.temperature,
            seed=sp.seed if sp.seed is not None else sp.sampling_seed,
            n=sp.n,
            min_tokens=sp.min_new_tokens,
            frequency_penalty=sp.frequency_penalty,
            presence_penalty=sp.presence_penalty,
            repetition_penalty=sp.repetition_penalty,
            logprobs=body.return_logprob,
            top_p=sp.top_p,
            top_k=sp.top_k,
            min_field="sampling_params.min_new_tokens",
            logprobs_field="return_logprob",
            prefix="sampling_params.",
        )
        check_unsupported(sp, SAMPLING_UNSUPPORTED, prefix="sampling_params.")
        check_unsupported(body, GENERATE_UNSUPPORTED)
        if (body.text is None) == (body.input_ids is None):
            raise APIError("Send exactly one of 'text' or 'input_ids'.", param="text")
        if body.input_ids is not None:
            ids = list(body.input_ids)
            check_ids(state, ids, "input_ids")
        else:
            ids = state.tokenizer.encode(body.text)
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
            stream=body.stream,
            skip_special_tokens=sp.skip_special_tokens,
            sampling=sampling,
        )
        return Generation(body, params, rid=body.rid or None)

    def response(self, gen: Generation, result: JobResult) -> dict:
        return {
            "text": result.text,
            "output_ids": result.output_ids,
            "meta_info": gen.meta_info(result),
        }

    async def stream(self, gen: Generation) -> AsyncIterator[str]:
        """SGLang's stream: each event carries the whole text so far; the last one is the
        non-streaming response body."""
        assert gen.job is not None
        text = ""
        async for event in gen.events():
            if isinstance(event, Delta):
                text += event.text
                yield sse({"text": text, "meta_info": self._progress(gen, event)})
            elif event.finish_reason == "abort":
                yield sse_aborted(event)
            else:
                yield sse(self.response(gen, event))
        yield SSE_DONE

    @staticmethod
    def _progress(gen: Generation, delta: Delta) -> dict:
        """The meta_info of a mid-stream event: counters so far, no finish reason yet."""
        assert gen.job is not None
        return {
            "id": gen.job.rid,
            "finish_reason": None,
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": delta.completion_tokens,
            "spec_verify_ct": delta.verify_ct,
            "cached_tokens": 0,
        }
