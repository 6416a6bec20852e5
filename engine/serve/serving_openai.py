"""What the two OpenAI endpoints share: their request checks, the response envelope (id,
object, created, model), usage, and the stream's usage options."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

from engine.sampling import SamplingSettings
from engine.serve.checks import OPENAI_UNSUPPORTED, check_model, check_sampling, check_unsupported
from engine.serve.generation import Generation, GenerationEndpoint, sse
from engine.serve.protocol import CompletionRequest
from engine.serve.state import ServerState
from engine.serve.worker import Delta, GenParams, JobResult


def check_openai_request(state: ServerState, req: Any) -> SamplingSettings:
    """The checks both OpenAI endpoints share: the model name and the sampling fields,
    which become the request's sampling settings."""
    check_model(state, req.model)
    # Completions' logprobs is a count where 0 still asks for the chosen token's logprob.
    logprobs = req.logprobs is not None if isinstance(req, CompletionRequest) else req.logprobs
    sampling = check_sampling(
        temperature=req.temperature,
        seed=req.seed,
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
    return sampling


@dataclass
class OpenAIGeneration(Generation):
    """A generation with the OpenAI envelope every body and chunk of its response carries."""

    id: str = ""
    model: str = ""
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def include_usage(self) -> bool:
        """stream_options.include_usage: a final usage-only chunk."""
        opts = self.body.stream_options
        return bool(opts and opts.include_usage)

    @property
    def continuous_usage(self) -> bool:
        """stream_options.continuous_usage_stats: usage on every chunk, not only the last."""
        opts = self.body.stream_options
        return bool(opts and opts.continuous_usage_stats)


class OpenAIEndpoint(GenerationEndpoint):
    """An OpenAI endpoint: the envelope's id prefix and the object names of its response."""

    id_prefix: ClassVar[str]
    object: ClassVar[str]
    chunk_object: ClassVar[str]

    def generation(
        self,
        state: ServerState,
        body: Any,
        params: GenParams,
        cls: type[OpenAIGeneration] = OpenAIGeneration,
        **fields: Any,
    ) -> Any:
        """A generation of class `cls` with its envelope: a fresh id, the served name."""
        return cls(
            body,
            params,
            id=f"{self.id_prefix}-{uuid.uuid4().hex}",
            model=state.args.served_model_name,
            **fields,
        )

    def body(self, gen: OpenAIGeneration, choice: dict, result: JobResult) -> dict:
        """The non-streaming body around its one choice; meta_info goes on both when asked."""
        body = {
            "id": gen.id,
            "object": self.object,
            "created": gen.created,
            "model": gen.model,
            "choices": [choice],
            "usage": usage(result),
        }
        if gen.body.return_meta_info:
            meta = gen.meta_info(result)
            choice["meta_info"] = meta
            body["meta_info"] = meta
        return body

    def chunk(self, gen: OpenAIGeneration, choices: list[dict], usage_obj: dict | None) -> str:
        """One streamed event."""
        return sse(
            {
                "id": gen.id,
                "object": self.chunk_object,
                "created": gen.created,
                "model": gen.model,
                "choices": choices,
                "usage": usage_obj,
            }
        )

    def usage_chunk(self, gen: OpenAIGeneration, result: JobResult) -> str:
        """The final usage-only event `stream_options.include_usage` asks for (no choices)."""
        return self.chunk(gen, [], usage(result))


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


def usage_so_far(gen: OpenAIGeneration, delta: Delta) -> dict:
    """Usage after a delta, for continuous_usage_stats."""
    return {
        "prompt_tokens": gen.prompt_tokens,
        "completion_tokens": delta.completion_tokens,
        "total_tokens": gen.prompt_tokens + delta.completion_tokens,
    }
