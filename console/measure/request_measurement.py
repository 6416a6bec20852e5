"""One measured request on any engine kind, turned into a `RequestSample`.

Every request is at the session's sampling (greedy, `temperature: 0`, unless the host
profile or the command names another; at temperature > 0 with its own seed) with an
explicit token count; fixed-length runs set `ignore_eos`. What each engine tells us
differs, so its adapter builds the body and reads the response
(`console/backends/<kind>/request.py`), taking the figures from the best source that
engine has, and the sample says which:

- builtin (ours) and SGLang: native `/generate` with `meta_info` (completion tokens,
  verify steps `spec_verify_ct`, finish reason). Ours also returns the server's decode
  time and each round's context and step time; SGLang started with `--enable-metrics`
  returns `decode_throughput`, from which the decode time follows.
- vLLM: `/v1/completions` (token-id prompt, `usage`), plus `/metrics` scraped before and
  after the request: at concurrency 1 the deltas of `vllm:request_decode_time_seconds`
  and `vllm:spec_decode_num_drafts` are this request's server-side decode time and verify
  steps. A `metrics` block from `--enable-per-request-metrics` wins where present.

A request whose output length, finish reason or token count is not what was asked is
flagged (kept, but out of every average); so is one with no decode time to speak of.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from console.analysis.records import RequestSample
from console.backends import EngineAdapter, get_adapter
from console.backends.openai import completions_body
from console.backends.request import RequestFigures, RequestSpec
from console.measure.prompts import repetition_share
from console.service.engine_client import (
    EngineClient,
    EngineRequestError,
    MetricsScrape,
    TimedResponse,
)

__all__ = ["RequestSpec", "completions_body", "measure_request", "native_body"]

_Figures = RequestFigures  # the name this module used before the adapters

# Pauses between scrapes while an engine's counters have not yet counted the request
# (about 1.5 s in all; they normally have at the first scrape).
CATCH_UP_S = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)


def native_body(spec: RequestSpec, engine: str) -> dict[str, Any]:
    """The request body `engine`'s adapter sends (the old name of `request_body`)."""
    return get_adapter(engine).request_body(spec, "default")


BURST_S = 0.002  # events this close together arrived in one read: one arrival, not several


def _stream_timing(
    response: TimedResponse, adapter: EngineAdapter
) -> tuple[float | None, float | None, int]:
    """(t_first, t_last, tokens between them) over events that carried new tokens.

    The first arrival often holds a burst: rounds the engine finished while the HTTP
    stream was still being set up arrive together. Counting from the start of that burst
    would credit its tokens to zero time, so the window starts at the burst's end."""
    first = last = None
    n_first = n_last = 0
    seen = 0
    for event in response.events:
        count = adapter.stream_tokens(event.data, seen)
        if count > seen:
            if first is None or (n_first == n_last and event.t - first <= BURST_S):
                first, n_first = event.t, count
            last, n_last = event.t, count
            seen = count
    return first, last, n_last - n_first


def _flag(spec: RequestSpec, fig: RequestFigures, decode_s: float | None) -> str | None:
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
    concurrency: int = 1,
    wave: int | None = None,
) -> RequestSample:
    """Send one request and return its sample (flagged where it is not what was asked).

    `concurrency` above 1: the console sends this one with others at once (`wave` says
    which batch), so the counters scraped around it would count the others' tokens too;
    they are not scraped, and the figures come from the reply and the stream alone."""
    adapter = get_adapter(engine)
    endpoint = adapter.request_endpoint
    around = adapter.scrapes_around_requests and concurrency == 1
    before = await _scrape(client) if around else None
    body = adapter.request_body(spec, model or "default")
    response = await client.timed_post(endpoint, body, stream=spec.stream)
    after = await _scrape(client) if around else None
    fig, lagging = await _figures_once_counted(client, adapter, response, before, after)

    n = fig.completion_tokens
    client_tok_s = ttft = None
    if response.streamed:
        t_first, t_last, between = _stream_timing(response, adapter)
        ttft = t_first
        if t_first is not None and t_last is not None and t_last > t_first and between > 0:
            client_tok_s = between / (t_last - t_first)
    decode_s, source = fig.server_decode_s, fig.server_decode_source
    if decode_s is None and client_tok_s:
        decode_s, source = (n - 1) / client_tok_s, "client-stream"
    flagged = ("the engine's counters never counted all of its tokens" if lagging
               else _flag(spec, fig, decode_s))  # fmt: skip
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
        temperature=0.0 if spec.sampling.greedy else spec.sampling.temperature,
        seed=spec.seed,
        flagged=flagged,
        concurrency=concurrency,
        wave=wave,
        text=fig.text,
        t=time.time(),
    )


async def _figures_once_counted(
    client: EngineClient,
    adapter: EngineAdapter,
    response: TimedResponse,
    before: MetricsScrape | None,
    after: MetricsScrape | None,
) -> tuple[RequestFigures, bool]:
    """The request's figures, scraped again while the engine's counters have not yet
    counted it (they are recorded after the reply leaves); True with them when they never
    did."""
    fig = adapter.response_figures(response, before, after)
    for pause in CATCH_UP_S:
        if adapter.counters_caught_up(before, after, fig.completion_tokens):
            return fig, False
        await asyncio.sleep(pause)
        after = await _scrape(client)
        fig = adapter.response_figures(response, before, after)
    return fig, not adapter.counters_caught_up(before, after, fig.completion_tokens)


async def _scrape(client: EngineClient) -> MetricsScrape | None:
    try:
        return await client.metrics()
    except EngineRequestError:
        return None  # no /metrics: figures fall back to the client's timing
