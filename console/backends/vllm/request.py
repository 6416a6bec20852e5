"""vLLM's `/v1/completions` request (token-id prompt, `usage`) and its figures: `/metrics`
is scraped before and after, and at concurrency 1 the deltas of
`vllm:request_decode_time_seconds` and `vllm:spec_decode_num_drafts` are this request's
server-side decode time and verify steps. A `metrics` block from
`--enable-per-request-metrics` wins where present."""

from __future__ import annotations

from console.backends.openai import from_openai_body
from console.backends.request import RequestFigures, finish_type
from console.backends.vllm.spec_fields import VLLM_DRAFTS, vllm_request_delta
from console.backends.wire import MetricsScrape, TimedResponse, metrics_delta

DECODE_TIME_SUM = "vllm:request_decode_time_seconds_sum"
TTFT_SUM = "vllm:time_to_first_token_seconds_sum"
TTFT_COUNT = "vllm:time_to_first_token_seconds_count"
GENERATION_TOKENS = "vllm:generation_tokens_total"


def server_ttft(before: MetricsScrape | None, after: MetricsScrape | None) -> float | None:
    """Time to first token of the one request between two scrapes, from vLLM's histogram
    (None unless exactly one first token was observed in between: concurrency 1)."""
    count = _delta(before, after, TTFT_COUNT)
    total = _delta(before, after, TTFT_SUM)
    if count is None or round(count) != 1 or total is None or total <= 0:
        return None
    return total


def decode_seconds_between(
    before: MetricsScrape | None, after: MetricsScrape | None
) -> float | None:
    """Decode time (first token to last) summed over the requests vLLM finished between two
    scrapes: its `request_decode_time_seconds` histogram's sum."""
    return _delta(before, after, DECODE_TIME_SUM)


def counters_caught_up(
    before: MetricsScrape | None, after: MetricsScrape | None, completion_tokens: int
) -> bool:
    """vLLM's frontend records a step's stats (tokens and spec-decode counters together)
    after it hands the step's output on, so a scrape sent the moment the reply arrives can
    miss the last rounds: caught up once `vllm:generation_tokens_total` counts every token
    of the reply."""
    generated = _delta(before, after, GENERATION_TOKENS)
    return generated is None or generated >= completion_tokens


def _delta(before: MetricsScrape | None, after: MetricsScrape | None, name: str) -> float | None:
    if before is None or after is None:
        return None
    return metrics_delta(before, after, name)


def _streamed_parts(response: TimedResponse) -> tuple[str, object, dict]:
    events = response.events
    text = "".join(str(c.get("text", "")) for e in events for c in e.data.get("choices") or [])
    finish = next(
        (
            c.get("finish_reason")
            for e in reversed(events)
            for c in e.data.get("choices") or []
            if c.get("finish_reason")
        ),
        None,
    )
    usage = next((e.data["usage"] for e in reversed(events) if e.data.get("usage")), {})
    return text, finish, usage


def completions_figures(
    response: TimedResponse, before: MetricsScrape | None, after: MetricsScrape | None
) -> RequestFigures:
    body = response.body
    if response.streamed:
        text, finish, usage = _streamed_parts(response)
    else:
        choice = (body.get("choices") or [{}])[0]
        text, finish = str(choice.get("text", "")), choice.get("finish_reason")
        usage = body.get("usage") or {}
    n = int(usage.get("completion_tokens") or 0)
    decode_s: float | None = None
    source = None
    steps: float | None = None
    per_request = body.get("metrics") if isinstance(body.get("metrics"), dict) else None
    if per_request and per_request.get("generation_time_ms"):
        decode_s, source = float(per_request["generation_time_ms"]) / 1000.0, "server"
    # Best first: the engine's own per-request block, else the counters around the request.
    spec = from_openai_body(body) or vllm_request_delta(before, after)
    if spec is not None:
        steps = spec.verify_steps
    if decode_s is None:
        d = _delta(before, after, DECODE_TIME_SUM)
        if d is not None and d > 0:
            decode_s, source = d, "server-metrics"
    if steps is None:
        steps = _delta(before, after, VLLM_DRAFTS)
    return RequestFigures(
        completion_tokens=n,
        finish_reason=finish_type(finish),
        prompt_tokens=usage.get("prompt_tokens"),
        verify_steps=int(steps) if steps else None,
        server_decode_s=decode_s,
        server_decode_source=source,  # type: ignore[arg-type]
        server_ttft_s=server_ttft(before, after),
        text=text,
        output_ids=None,
        rounds=None,
        spec=spec,
    )
