"""One measured request on each engine kind, turned into a `RequestSample`.

Every request is greedy (`temperature: 0`) with an explicit token count; fixed-length
runs set `ignore_eos`. What each engine tells us differs, so the figures are taken from
the best source each one has, and the sample says which:

- builtin (ours) and SGLang: native `/generate` with `meta_info` (completion tokens,
  verify steps `spec_verify_ct`, finish reason). Ours also returns the server's decode
  time and each round's context and step time (`return_round_stats`); SGLang started
  with `--enable-metrics` returns `decode_throughput`, from which the decode time follows.
- vLLM: `/v1/completions` (token-id prompt, `usage`), plus `/metrics` scraped before and
  after the request: at concurrency 1 the deltas of `vllm:request_decode_time_seconds`
  and `vllm:spec_decode_num_drafts` are this request's server-side decode time and verify
  steps. A `metrics` block from `--enable-per-request-metrics` wins where present.

A request whose output length, finish reason or token count is not what was asked is
flagged (kept, but out of every average); so is one with no decode time to speak of.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from console.analysis.records import DecodeSource, RequestSample
from console.measure import spec_fields
from console.measure.prompts import repetition_share
from console.service.engine_client import (
    EngineClient,
    EngineRequestError,
    MetricsScrape,
    TimedResponse,
)

NATIVE_ENGINES = ("builtin", "sglang")


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

    def __post_init__(self) -> None:
        if (self.input_ids is None) == (self.text is None):
            raise ValueError("a RequestSpec needs exactly one of input_ids or text")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")


@dataclass(frozen=True)
class _Figures:
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
    spec: spec_fields.SpecDetails | None = None


def native_body(spec: RequestSpec, engine: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "sampling_params": {
            "temperature": 0,
            "max_new_tokens": spec.max_tokens,
            "ignore_eos": spec.ignore_eos,
        },
        "stream": spec.stream,
    }
    if spec.input_ids is not None:
        body["input_ids"] = list(spec.input_ids)
    else:
        body["text"] = spec.text
    if engine == "builtin":
        body["return_round_stats"] = True  # our engine's own per-round record
    return body


def completions_body(spec: RequestSpec, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "prompt": list(spec.input_ids) if spec.input_ids is not None else spec.text,
        "max_tokens": spec.max_tokens,
        "temperature": 0,
        "ignore_eos": spec.ignore_eos,
        "stream": spec.stream,
    }
    if spec.stream:
        body["stream_options"] = {"include_usage": True}
    return body


def _finish_type(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("type")
    return str(value) if value else "unknown"


def _native_figures(response: TimedResponse) -> _Figures:
    meta = response.body.get("meta_info") or {}
    n = int(meta.get("completion_tokens") or 0)
    steps = meta.get("spec_verify_ct")
    decode_s = meta.get("decode_time")  # ours
    if decode_s is None and meta.get("decode_throughput") and n > 1:
        decode_s = (n - 1) / float(meta["decode_throughput"])  # SGLang --enable-metrics
    rounds = None
    if isinstance(meta.get("round_stats"), list):
        rounds = [
            [float(r["context_len"]), float(r["step_ms"]) / 1000.0, float(r["commit_len"])]
            for r in meta["round_stats"]
        ]
    return _Figures(
        completion_tokens=n,
        finish_reason=_finish_type(meta.get("finish_reason")),
        prompt_tokens=meta.get("prompt_tokens"),
        verify_steps=int(steps) if steps else None,
        server_decode_s=float(decode_s) if decode_s else None,
        server_decode_source="server" if decode_s else None,
        server_ttft_s=meta.get("ttft"),
        text=str(response.body.get("text", "")),
        output_ids=response.body.get("output_ids"),
        rounds=rounds,
        spec=spec_fields.from_sglang_meta(meta),
    )


def _delta(before: MetricsScrape | None, after: MetricsScrape | None, *names: str) -> float | None:
    if before is None or after is None:
        return None
    a, b = before.first_of(*names), after.first_of(*names)
    return None if a is None or b is None else b - a


def _completions_figures(
    response: TimedResponse, before: MetricsScrape | None, after: MetricsScrape | None
) -> _Figures:
    body = response.body
    if response.streamed:
        text = "".join(
            str(c.get("text", "")) for e in response.events for c in e.data.get("choices") or []
        )
        finish = next(
            (
                c.get("finish_reason")
                for e in reversed(response.events)
                for c in e.data.get("choices") or []
                if c.get("finish_reason")
            ),
            None,
        )
        usage = next(
            (e.data["usage"] for e in reversed(response.events) if e.data.get("usage")), {}
        )
    else:
        choice = (body.get("choices") or [{}])[0]
        text, finish, usage = (
            str(choice.get("text", "")),
            choice.get("finish_reason"),
            body.get("usage") or {},
        )
    n = int(usage.get("completion_tokens") or 0)
    decode_s: float | None = None
    source: DecodeSource | None = None
    steps: float | None = None
    per_request = body.get("metrics") if isinstance(body.get("metrics"), dict) else None
    if per_request and per_request.get("generation_time_ms"):
        decode_s, source = float(per_request["generation_time_ms"]) / 1000.0, "server"
    # Best first: the engine's own per-request block, else the counters around the request.
    spec = spec_fields.from_openai_body(body) or spec_fields.vllm_request_delta(before, after)
    if spec is not None:
        steps = spec.verify_steps
    if decode_s is None:
        d = _delta(before, after, "vllm:request_decode_time_seconds_sum")
        if d is not None and d > 0:
            decode_s, source = d, "server-metrics"
    if steps is None:
        steps = _delta(before, after, "vllm:spec_decode_num_drafts_total")
    return _Figures(
        completion_tokens=n,
        finish_reason=_finish_type(finish),
        prompt_tokens=usage.get("prompt_tokens"),
        verify_steps=int(steps) if steps else None,
        server_decode_s=decode_s,
        server_decode_source=source,
        server_ttft_s=None,
        text=text,
        output_ids=None,
        rounds=None,
        spec=spec,
    )


BURST_S = 0.002  # events this close together arrived in one read: one arrival, not several


def _stream_timing(response: TimedResponse, native: bool) -> tuple[float | None, float | None, int]:
    """(t_first, t_last, tokens between them) over events that carried new tokens.

    The first arrival often holds a burst: rounds the engine finished while the HTTP
    stream was still being set up arrive together. Counting from the start of that burst
    would credit its tokens to zero time, so the window starts at the burst's end."""
    first = last = None
    n_first = n_last = 0
    seen = 0
    for event in response.events:
        if native:
            count = int((event.data.get("meta_info") or {}).get("completion_tokens") or 0)
        else:  # OpenAI chunks: count chunks with text (usage per chunk is rarely on)
            chunk_text = "".join(str(c.get("text") or "") for c in event.data.get("choices") or [])
            count = seen + (1 if chunk_text else 0)
        if count > seen:
            if first is None or (n_first == n_last and event.t - first <= BURST_S):
                first, n_first = event.t, count
            last, n_last = event.t, count
            seen = count
    return first, last, n_last - n_first


def _flag(spec: RequestSpec, fig: _Figures, decode_s: float | None) -> str | None:
    n = fig.completion_tokens
    if fig.finish_reason in ("abort", "error"):
        return f"the engine ended the request ({fig.finish_reason})"
    if n != spec.max_tokens:
        why = (
            "stopped at EOS or a stop string" if fig.finish_reason == "stop" else fig.finish_reason
        )
        return f"{n} of {spec.max_tokens} tokens ({why})"
    if spec.ignore_eos and fig.finish_reason != "length":
        return f"finish reason {fig.finish_reason!r}, not 'length'"
    if n < 2:
        return "one token has no decode phase"
    if decode_s is None or decode_s <= 0:
        return "no decode time (the engine reports none and the request was not streamed)"
    return None


async def measure_request(
    client: EngineClient,
    engine: str,
    spec: RequestSpec,
    *,
    flags_hash: str,
    model: str | None = None,
) -> RequestSample:
    """Send one request and return its sample (flagged where it is not what was asked)."""
    native = engine in NATIVE_ENGINES
    before = after = None
    if native:
        endpoint = "/generate"
        response = await client.timed_post(endpoint, native_body(spec, engine), stream=spec.stream)
        fig = _native_figures(response)
    else:
        endpoint = "/v1/completions"
        before = await _scrape(client)
        body = completions_body(spec, model or "default")
        response = await client.timed_post(endpoint, body, stream=spec.stream)
        after = await _scrape(client)
        fig = _completions_figures(response, before, after)

    n = fig.completion_tokens
    client_tok_s = ttft = None
    if response.streamed:
        t_first, t_last, between = _stream_timing(response, native)
        ttft = t_first
        if t_first is not None and t_last is not None and t_last > t_first and between > 0:
            client_tok_s = between / (t_last - t_first)
    decode_s, source = fig.server_decode_s, fig.server_decode_source
    if decode_s is None and client_tok_s:
        decode_s, source = (n - 1) / client_tok_s, "client-stream"
    flagged = _flag(spec, fig, decode_s)
    steps = fig.verify_steps
    decode_tok_s = (n - 1) / decode_s if decode_s and n > 1 else None
    prompt_tokens = fig.prompt_tokens
    if prompt_tokens is None:
        prompt_tokens = len(spec.input_ids) if spec.input_ids is not None else 0
    output = fig.output_ids if fig.output_ids else fig.text
    return RequestSample(
        engine=engine,
        endpoint=endpoint,
        text_type=spec.text_type,
        prompt_id=spec.prompt_id,
        context_tokens=int(prompt_tokens),
        max_tokens=spec.max_tokens,
        ignore_eos=spec.ignore_eos,
        streamed=spec.stream,
        flags_hash=flags_hash,
        completion_tokens=n,
        finish_reason=fig.finish_reason,
        latency_s=response.latency_s,
        ttft_s=ttft,
        decode_time_s=decode_s,
        decode_source=source,
        verify_steps=steps,
        decode_tok_s=decode_tok_s,
        commit_len=(n - 1) / steps if steps and n > 1 else None,
        step_time_s=decode_s / steps if steps and decode_s else None,
        server_ttft_s=fig.server_ttft_s,
        client_decode_tok_s=client_tok_s,
        decode_context=int(prompt_tokens) + n / 2,
        repetition=repetition_share(output),
        rounds=fig.rounds,
        spec=fig.spec.as_dict() if fig.spec is not None else None,
        spec_source=fig.spec.source if fig.spec is not None else None,
        output_ids=fig.output_ids,
        flagged=flagged,
        text=fig.text,
        t=time.time(),
    )


async def _scrape(client: EngineClient) -> MetricsScrape | None:
    try:
        return await client.metrics()
    except EngineRequestError:
        return None  # no /metrics: figures fall back to the client's timing
