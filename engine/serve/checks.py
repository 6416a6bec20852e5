"""Request checks the endpoints share: the model name, the sampling fields (valid ones
become the request's SamplingSettings, ones the engine cannot honour are refused), token
ids, and the output length that fits the context.

A field that would change the output is refused with a 400 naming it, never dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from engine.sampling import SamplingSettings
from engine.serve.errors import APIError
from engine.serve.state import ServerState


def check_model(state: ServerState, name: str | None) -> None:
    if name is None or name in (state.args.served_model_name, state.model_path):
        return
    raise APIError(
        f"The model '{name}' does not exist; this server serves '{state.args.served_model_name}'.",
        status=404,
        param="model",
        code="model_not_found",
    )


def check_sampling(
    *,
    temperature,
    seed=None,
    n=1,
    min_tokens=0,
    frequency_penalty=None,
    presence_penalty=None,
    repetition_penalty=None,
    logprobs=False,
    top_p=None,
    top_k=None,
    min_field="min_tokens",
    logprobs_field="logprobs",
    prefix="",
) -> SamplingSettings:
    """The request's sampling settings (temperature 0 or omitted: greedy), or a 400 naming
    the first field the engine cannot honour."""
    if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
        raise APIError(
            f"temperature must be a finite number >= 0 (0 decodes greedily), got {temperature:g}.",
            param=f"{prefix}temperature",
        )
    if n != 1:
        raise APIError(
            f"n={n} is not supported: this engine gives one completion per request, so send n=1.",
            param=f"{prefix}n",
        )
    # The ranges SGLang and vLLM enforce.
    if top_p is not None and not 0 < top_p <= 1:
        raise APIError(f"top_p must be in (0, 1], got {top_p:g}.", param=f"{prefix}top_p")
    if top_k is not None and top_k < -1:
        raise APIError(
            f"top_k must be -1 (no limit), 0 or a positive count, got {top_k}.",
            param=f"{prefix}top_k",
        )
    if min_tokens:
        raise APIError(
            f"{min_field} is not supported; use ignore_eos with max_tokens for an "
            f"exact output length.",
            param=min_field,
        )
    for name, value, neutral in (
        ("frequency_penalty", frequency_penalty, 0),
        ("presence_penalty", presence_penalty, 0),
        ("repetition_penalty", repetition_penalty, 1),
    ):
        if value is not None and value != neutral:
            raise APIError(
                f"{name} is not supported by this engine; omit it.", param=f"{prefix}{name}"
            )
    if logprobs:
        raise APIError(
            f"{logprobs_field} is not supported by this engine; omit it.", param=logprobs_field
        )
    return SamplingSettings(
        temperature=float(temperature or 0.0),
        top_p=float(1.0 if top_p is None else top_p),
        top_k=-1 if top_k is None else top_k,
        seed=seed,
    )


def check_unsupported(
    req: BaseModel, fields: dict[str, Callable[[Any], bool]], prefix: str = ""
) -> None:
    """400 for the first declared field whose value is not neutral (fields maps a name to
    "this value is neutral"): a field that would change the output is never dropped."""
    for name, neutral in fields.items():
        value = getattr(req, name)
        if not neutral(value):
            raise APIError(
                f"{prefix}{name} is not supported by this engine; omit it.",
                param=f"{prefix}{name}",
                code="unsupported_parameter",
            )


def _unset(value) -> bool:
    return value is None or value == [] or value == {}


def _text_format(value) -> bool:
    return value is None or value.get("type") == "text"


OPENAI_UNSUPPORTED = {
    "logit_bias": _unset,
    "response_format": _text_format,
    "stop_token_ids": _unset,
}
SAMPLING_UNSUPPORTED = {
    "stop_token_ids": _unset,
    "regex": _unset,
    "json_schema": _unset,
    "ebnf": _unset,
    "no_stop_trim": lambda v: not v,
}
GENERATE_UNSUPPORTED = {"return_hidden_states": lambda v: not v, "lora_path": _unset}


def check_ids(state: ServerState, ids: list[int], param: str) -> None:
    vocab = state.tokenizer.vocab_size
    bad = next((t for t in ids if not 0 <= t < vocab), None)
    if bad is not None:
        raise APIError(
            f"Token id {bad} in '{param}' is outside the vocabulary (0..{vocab - 1}).", param=param
        )


def resolve_max_tokens(
    state: ServerState, prompt_len: int, requested: int | None, *, default: int | None, param: str
) -> int:
    ctx = state.context_length
    if prompt_len == 0:
        raise APIError("The prompt is empty; send at least one token.", param="prompt")
    if prompt_len >= ctx:
        raise APIError(
            f"The prompt is {prompt_len} tokens, which leaves no room in the "
            f"{ctx}-token context; shorten it.",
            param="prompt",
            code="context_length_exceeded",
        )
    room = ctx - prompt_len
    if requested is None:
        return room if default is None else min(default, room)
    if requested < 1:
        raise APIError(f"{param} must be at least 1, got {requested}.", param=param)
    if requested > room:
        raise APIError(
            f"{param} ({requested}) plus the prompt ({prompt_len} tokens) exceeds "
            f"the {ctx}-token context; the most it can be is {room}.",
            param=param,
            code="context_length_exceeded",
        )
    return requested


def stop_list(stop: str | list[str] | None) -> list[str]:
    if stop is None:
        return []
    return [s for s in ([stop] if isinstance(stop, str) else stop) if s]
