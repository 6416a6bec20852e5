"""One measured request, as every engine adapter sees it: what to send and what came back.

`RequestSpec` is what the console asks for (a prompt of exact tokens or text, how many
tokens, streamed or not, at which sampling and seed); `RequestFigures` is what one
engine's response says, before the arithmetic every engine shares
(`console/measure/request_measurement.py`). Each adapter builds its own request body
and reads its own response into `RequestFigures`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.analysis.records import DecodeSource
from console.backends.spec_details import SpecDetails
from console.sampling import GREEDY, Sampling


@dataclass(frozen=True)
class RequestSpec:
    """What to send: a prompt (token ids for an exact context, or text), how many tokens."""

    text_type: str
    prompt_id: str
    max_tokens: int
    ignore_eos: bool = True
    stream: bool = False
    input_ids: tuple[int, ...] | None = None
    text: str | None = None
    # the sampling it is decoded at and its own seed (None: greedy, or unseeded); each
    # adapter spells them in its engine's fields
    sampling: Sampling = GREEDY
    seed: int | None = None

    def __post_init__(self) -> None:
        if (self.input_ids is None) == (self.text is None):
            raise ValueError("a RequestSpec needs exactly one of input_ids or text")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")


@dataclass(frozen=True)
class RequestFigures:
    """What one engine's response says, before the shared arithmetic."""

    completion_tokens: int
    finish_reason: str
    prompt_tokens: int | None
    verify_steps: int | None
    server_decode_s: float | None
    server_decode_source: DecodeSource | None
    server_ttft_s: float | None
    text: str
    output_ids: list[int] | None
    rounds: list[list[float]] | None
    spec: SpecDetails | None = None


def finish_type(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("type")
    return str(value) if value else "unknown"
