"""Request bodies of the HTTP API (OpenAI completions/chat and SGLang /generate).

Strict types (a string is not an integer) so that a wrong type is a 400 naming the field
rather than a silent coercion. Every field declared here is honoured or refused by the
server with a 400 that says it is unsupported (engine/serve/checks.py `check_sampling`,
`check_unsupported`): the sampling settings (temperature, top_p, top_k, seed) are
range-checked and honoured, penalties only at their neutral values; the ones that would
change the output in ways this engine does not implement (logit_bias, constrained
decoding, logprobs...) are declared only so that a non-neutral value is refused instead
of silently dropped. Fields
nobody declared are ignored, as OpenAI-compatible servers do.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class StreamOptions(_Body):
    include_usage: bool = False
    continuous_usage_stats: bool = False


class _OpenAICommon(_Body):
    model: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    n: int = 1
    seed: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    ignore_eos: bool = False
    min_tokens: int = 0
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    user: str | None = None
    # Declared to be refused when set (they would change the output): see check_unsupported.
    logit_bias: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    stop_token_ids: list[int] | None = None
    # SGLang extras: per-request engine metadata.
    return_meta_info: bool = False
    return_commit_lengths: bool = False
    return_round_stats: bool = False


class CompletionRequest(_OpenAICommon):
    prompt: str | list[int] | list[str] | list[list[int]]
    max_tokens: int | None = None
    echo: bool = False
    logprobs: int | None = None
    best_of: int | None = None
    suffix: str | None = None


class ChatMessage(_Body):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class ChatCompletionRequest(_OpenAICommon):
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    separate_reasoning: bool = True
    stream_reasoning: bool = True  # False: reasoning_content arrives in one chunk at the end


class SamplingParams(_Body):
    max_new_tokens: int | None = None
    min_new_tokens: int = 0
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    sampling_seed: int | None = None  # SGLang's name for the per-request seed
    ignore_eos: bool = False
    stop: str | list[str] | None = None
    skip_special_tokens: bool = True
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    repetition_penalty: float | None = None
    n: int = 1
    # Declared to be refused when set (they would change the output): see check_unsupported.
    stop_token_ids: list[int] | None = None
    regex: str | None = None
    json_schema: str | None = None
    ebnf: str | None = None
    no_stop_trim: bool = False


class GenerateRequest(_Body):
    text: str | None = None
    input_ids: list[int] | None = None
    sampling_params: SamplingParams = Field(default_factory=SamplingParams)
    stream: bool = False
    rid: str | None = None
    return_logprob: bool = False
    return_commit_lengths: bool = False
    return_round_stats: bool = False
    # Only meaningful with return_logprob, which is refused; SGLang's clients send them anyway.
    return_text_in_logprobs: bool = False
    logprob_start_len: int | None = None
    top_logprobs_num: int | None = None
    # Declared to be refused when set: see check_unsupported.
    return_hidden_states: bool = False
    lora_path: Any = None


class TokenizeRequest(_Body):
    model: str | None = None
    prompt: str | None = None
    text: str | None = None
    add_special_tokens: bool = False


class DetokenizeRequest(_Body):
    model: str | None = None
    tokens: list[int]
