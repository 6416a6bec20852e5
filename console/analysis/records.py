"""The measurement records every part of the console shares: one request's figures with
their provenance, one live-series sample, and the description of a run.

Plain frozen dataclasses with `as_dict()` / `from_dict()`, so the run store, the `--json`
output and the TUI all read the same fields. Every figure says where it came from: a
number without its provenance is how "32 tok/s" gets compared with "138 tok/s" measured
another way (streamed over a tunnel, prefill included, another text).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from console.sampling import Sampling

# Where a decode time came from, best first:
#   server         the engine's own timing of this request (meta_info / per-request metrics)
#   server-metrics a server-side counter delta around this one request (vLLM /metrics)
#   client-stream  (N-1) / (t_last - t_first) over the SSE events as this client saw them
#   client-total   the whole request's wall time, prefill and round trip included (a last resort)
DecodeSource = Literal["server", "server-metrics", "client-stream", "client-total"]
LiveSource = Literal["log", "metrics", "request"]
RunStatus = Literal["running", "complete", "incomplete", "failed"]

# How each source is named wherever a figure's provenance is shown (CLI, TUI, exports).
DECODE_SOURCE_TEXT: dict[str | None, str] = {
    "server": "server decode time",
    "server-metrics": "server /metrics delta",
    "client-stream": "client stream timing",
    "client-total": "client wall time, prefill included",
    None: "no decode time",
}
LIVE_SOURCE_TEXT: dict[str, str] = {
    "log": "engine log line",
    "metrics": "/metrics delta",
    "request": "measured request",
}


def _canonical(value: Any) -> Any:
    """One spelling per flag value: a value typed on the command line ("2048", "true")
    hashes as the number or switch the engine's config holds, so a calibration or a sweep
    stored under one spelling is found under the other."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        for kind in (int, float):
            try:
                number = kind(text)
            except ValueError:
                continue
            if not math.isfinite(number):  # "nan", "inf": names, not figures
                return value
            return int(number) if isinstance(number, float) and number.is_integer() else number
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def flags_hash(flags: dict[str, Any]) -> str:
    """A short stable hash of an engine's flags: runs with equal hashes are comparable
    (values in one spelling each, `_canonical`)."""
    canonical = {name: _canonical(value) for name, value in flags.items()}
    text = json.dumps(canonical, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class RequestSample:
    """One measured request: what was asked, what came back, and how each figure was taken.

    `commit_len` is decode tokens per verify step, (N - 1) / steps: the prefill's token is
    not produced by a verify step, and with it left out `commit_len / step_time_s` equals
    `decode_tok_s` exactly (SGLang's `spec_accept_length` is N / steps; the difference is
    under 2% from 64 tokens on).
    """

    # what was asked
    engine: str  # builtin | sglang | vllm
    endpoint: str  # /generate, /v1/completions, ...
    text_type: str  # code | prose | repetitive | custom
    prompt_id: str
    context_tokens: int  # prompt length in tokens, exact where token ids were sent
    max_tokens: int
    ignore_eos: bool
    streamed: bool
    flags_hash: str
    # what came back
    completion_tokens: int
    finish_reason: str  # length | stop | abort | error
    latency_s: float  # client wall time, request sent -> response complete
    ttft_s: float | None  # client-side time to first token (streamed requests only)
    decode_time_s: float | None
    decode_source: DecodeSource | None
    verify_steps: int | None  # None where the engine reports none (no speculation, old vLLM)
    decode_tok_s: float | None  # (N - 1) / decode_time
    commit_len: float | None  # (N - 1) / verify_steps
    step_time_s: float | None  # decode_time / verify_steps
    server_ttft_s: float | None = None
    client_decode_tok_s: float | None = None  # the stream's own figure, kept beside the server's
    # the mean context during decode: prompt + half the output (attention cost follows it)
    decode_context: float | None = None
    # share of the output's 8-grams seen earlier in it: looping text is easy to draft, so a
    # high value means the commit length is inflated by repetition, not earned by the drafter
    repetition: float | None = None
    # the engine's own per-round record where it gives one (ours): [context, step_s, commit]
    rounds: list[list[float]] | None = None
    # the engine's own spec-decode figures (`spec_fields.SpecDetails.as_dict()`) and which
    # field set they came from; verify_steps above is taken from them where present
    spec: dict[str, Any] | None = None
    spec_source: str | None = None
    # the output's token ids where the engine returns them: the per-round curve lines its
    # loop marks up with the rounds (console/analysis/round_curve.py)
    output_ids: list[int] | None = None
    # the sampling temperature it was decoded at (0: greedy) and the seed it sent (None:
    # greedy or unseeded): at temperature > 0 commit is a draw, exact only per seed
    temperature: float = 0.0
    seed: int | None = None
    flagged: str | None = None  # why this sample is kept out of averages; None when it counts
    # how many requests the console had in flight together when it sent this one, and
    # which wave of them (`specconsole load`): 1 and None for everything measured alone
    concurrency: int = 1
    wave: int | None = None
    retried: bool = False  # taken again after the link dropped mid-request
    text: str = ""
    t: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.flagged is None

    @property
    def sampling_text(self) -> str:
        """The sampling it was decoded at, as every face shows it: "greedy", "T=1 seed 42"."""
        if not self.temperature:
            return "greedy"
        seed = "unseeded" if self.seed is None else f"seed {self.seed}"
        return f"T={self.temperature:g} {seed}"

    @property
    def provenance(self) -> str:
        """How this sample's figures were taken, in one line every face shows the same:
        "server decode time, non-streaming, ctx 1024, 64 tok, prose"."""
        return ", ".join(
            (
                DECODE_SOURCE_TEXT.get(self.decode_source, str(self.decode_source)),
                "streamed" if self.streamed else "non-streaming",
                f"ctx {self.context_tokens}",
                f"{self.completion_tokens} tok",
                self.text_type,
            )
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestSample:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class LiveSample:
    """One point of the live series the dashboard charts and `watch` prints."""

    t: float  # unix time
    source: LiveSource
    tok_s: float | None = None
    commit_len: float | None = None
    step_time_s: float | None = None
    context_tokens: int | None = None
    queue: int | None = None
    running: int | None = None
    note: str = ""  # e.g. "reconnected after 4.1 s"
    # which series the commit length came from (an exact counter or a last-interval gauge)
    spec_source: str | None = None
    per_position: list[float] | None = None  # acceptance at each draft position (vLLM)
    # Requests per verify round over the interval, where the engine counts rounds apart
    # from request-rounds (ours): under a batch of N, tok/s is the aggregate over the
    # streams, commit is per stream and round, step is the round's time, and
    # tok/s = batch x commit / step (batch 1: the figures of one request alone).
    batch: float | None = None

    @property
    def per_stream_tok_s(self) -> float | None:
        """One stream's decode rate: the aggregate over `batch` (= commit / step where the
        engine counts rounds); `tok_s` itself where the batch is not known."""
        if self.tok_s is None or not self.batch:
            return self.tok_s
        return self.tok_s / self.batch

    @property
    def provenance(self) -> str:
        """Where this point came from: "engine log line, ctx 1024" (see `RequestSample`)."""
        parts = [LIVE_SOURCE_TEXT.get(self.source, self.source)]
        if self.context_tokens is not None:
            parts.append(f"ctx {self.context_tokens}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LiveSample:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


# What a run is for, by method, where the method says it: a baseline is a context sweep
# by method but must never be taken for the sweep a verdict's model is fitted from.
KIND_OF_METHOD = {
    "probe": "prompt",
    "context-sweep": "sweep",
    "output-sweep": "output-sweep",
    "twopoint": "twopoint",
    "streamcheck": "streamcheck",
    "watch": "watch",
    "breakeven": "breakeven",
    "load": "load",
}
RUN_KINDS = ("baseline", *dict.fromkeys(KIND_OF_METHOD.values()))
# The one baseline an older specconsole ran (before runs were labelled): a one-context
# sweep at 256 with 96 tokens of code and prose, three times.
_OLD_BASELINE = {"contexts": [256], "output_tokens": 96, "text_types": ["code", "prose"],
                 "repeat": 3}  # fmt: skip


def run_kind(method: str, params: dict[str, Any] | None = None) -> str:
    """The kind of a run stored without one: from its method, and an older baseline
    recognised by its fixed parameters."""
    if (
        method == "context-sweep"
        and params
        and all(params.get(k) == v for k, v in _OLD_BASELINE.items())
    ):
        return "baseline"
    return KIND_OF_METHOD.get(method, method)


@dataclass(frozen=True)
class RunInfo:
    """What a stored run is: where, on what engine and flags, by which method, and for
    what (`kind`: baseline, sweep, breakeven, prompt, ...; by default from the method)."""

    host: str
    engine: str
    method: str  # probe | twopoint | context-sweep | output-sweep | streamcheck | watch | baseline
    params: dict[str, Any]
    flags: dict[str, Any]
    engine_version: str | None = None
    flags_hash: str = ""
    started_at: float = field(default_factory=time.time)
    kind: str = ""
    # the sampling its requests were decoded at (`Sampling.as_dict()`); empty: greedy
    # (every run stored before sampling was recorded was)
    sampling: dict[str, Any] = field(default_factory=dict)

    @property
    def sampling_settings(self) -> Sampling:
        return Sampling.from_dict(self.sampling)

    def __post_init__(self) -> None:
        if not self.flags_hash:
            object.__setattr__(self, "flags_hash", flags_hash(self.flags))
        if not self.kind:
            object.__setattr__(self, "kind", run_kind(self.method, self.params))

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
