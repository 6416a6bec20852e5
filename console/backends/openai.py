"""The OpenAI completions protocol as engines speak it: the request body, the token count
of a streamed chunk, and the per-request spec block an OpenAI-style response may carry
(vLLM's `metrics.speculative_decoding`, or SGLang's `sglext.spec_tokens_details`)."""

from __future__ import annotations

from typing import Any

from console.backends.request import RequestSpec
from console.backends.sglang.spec_fields import from_sglext
from console.backends.spec_details import SpecDetails
from console.backends.vllm.spec_fields import from_vllm_metrics

ENDPOINT = "/v1/completions"


def completions_body(spec: RequestSpec, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "prompt": list(spec.input_ids) if spec.input_ids is not None else spec.text,
        "max_tokens": spec.max_tokens,
        "temperature": 0,
        "ignore_eos": spec.ignore_eos,
        "stream": spec.stream,
    }
    body.update(openai_sampling(spec))
    if spec.stream:
        body["stream_options"] = {"include_usage": True}
    return body


def openai_sampling(spec: RequestSpec) -> dict[str, Any]:
    """The sampling fields of an OpenAI-style body (vLLM, SGLang and ours take `top_k` and
    `seed` there too); none beyond `temperature: 0` when greedy, so a greedy request is
    the body it always was."""
    s = spec.sampling
    if s.greedy:
        return {}
    fields: dict[str, Any] = {"temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k}
    if spec.seed is not None:
        fields["seed"] = spec.seed
    return fields


def stream_tokens(data: dict[str, Any], seen: int) -> int:
    """Tokens so far after one chunk: chunks with text count one each (usage per chunk is
    rarely on)."""
    chunk_text = "".join(str(c.get("text") or "") for c in data.get("choices") or [])
    return seen + (1 if chunk_text else 0)


def from_openai_body(body: dict[str, Any]) -> SpecDetails | None:
    """The per-request spec block of an OpenAI-style response (or the last stream chunk)."""
    metrics = body.get("metrics")
    if isinstance(metrics, dict):
        found = from_vllm_metrics(metrics)
        if found is not None:
            return found
    return from_sglext(body)
