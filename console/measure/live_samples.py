"""Turning what an engine says about itself into `LiveSample`s: one log line, or the
difference between two `/metrics` scrapes, or one of the console's own measured requests.

These are pure functions so the arithmetic can be checked against each engine's real
formats without a running engine. The rules they follow:

- A sample exists only when decoding happened. A scrape pair with no verify steps (or no
  generated tokens) while the engine idles gives nothing, not a row of zeros that would
  drag a chart's average down.
- tok/s is a decode rate, never diluted by idle time. Our engine and vLLM expose busy time
  as a histogram sum (step time, inter-token latency), so tok/s over a scrape interval is
  tokens / busy seconds, not tokens / wall seconds. Only where an engine has no busy-time
  series does the wall clock stand in, and the sample's note says so.
- Commit length includes the bonus token everywhere (SGLang's `accept len`, vLLM's
  `1 + accepted / drafts`, our committed / verify steps), so `tok/s = commit / step time`.
- Older SGLang has no speculative counters, only gauges it refreshes every decode-log
  interval; a scrape there yields its last-interval figures, once per refresh. Where
  `sglang:spec_verify_calls_total` exists the commit length is exact over the scrape
  window instead (tokens / verify calls), and `spec_source` says which one a sample holds.
"""

from __future__ import annotations

import time
from typing import Literal

from console.analysis.records import LiveSample, RequestSample
from console.backends.logparse import (
    parse_sglang_decode,
    parse_vllm_spec,
    parse_vllm_throughput,
)
from console.measure import spec_fields
from console.service.engine_client import MetricsScrape

MetricsKind = Literal["builtin", "vllm", "sglang"]

# Our engine (specengine): monotonic counters plus a step-time histogram.
OURS_STEPS = "specengine:spec_verify_steps_total"
OURS_COMMITTED = "specengine:spec_committed_tokens_total"
OURS_STEP_SUM = "specengine:step_time_seconds_sum"
OURS_STEP_COUNT = "specengine:step_time_seconds_count"
# vLLM V1.
VLLM_GENERATED = "vllm:generation_tokens_total"
VLLM_DRAFTS = "vllm:spec_decode_num_drafts_total"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
VLLM_RUNNING = "vllm:num_requests_running"
VLLM_WAITING = "vllm:num_requests_waiting"
# One observation per decode iteration of each request (vllm/v1/metrics/stats.py), so its
# sum is decode busy time per stream; the older name has the same meaning.
VLLM_ITL_SUM = ("vllm:inter_token_latency_seconds_sum", "vllm:time_per_output_token_seconds_sum")
VLLM_ITL_COUNT = (
    "vllm:inter_token_latency_seconds_count",
    "vllm:time_per_output_token_seconds_count",
)
# SGLang gauges (ours exposes them too, with the same meaning).
SGL_THROUGHPUT = "sglang:gen_throughput"
SGL_ACCEPT = "sglang:spec_accept_length"
SGL_USED_TOKENS = "sglang:num_used_tokens"
SGL_QUEUE = "sglang:num_queue_reqs"
SGL_RUNNING = "sglang:num_running_reqs"

WALL_CLOCK_NOTE = "tok/s over wall time (this engine exposes no decode busy time)"


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def _positive_int(value: float | None) -> int | None:
    # A context of 0 is "nothing running at the moment of the scrape", not a context.
    return None if value is None or value <= 0 else round(value)


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return num / den


# -- log lines ----------------------------------------------------------------------------


def sample_from_log_line(line: str, t: float | None = None) -> LiveSample | None:
    """A sample from SGLang's (and our engine's) `Decode batch` line, or vLLM's
    `Avg prompt throughput ...` or `SpecDecoding metrics` line; None for every other line
    (SGLang's `Prefill batch` input throughput is a prefill rate, not a decode figure).

    Decode batch: tok/s = gen throughput, commit = accept len, step = accept len / gen
    throughput (1 / gen throughput when speculation is off: one token per step), context =
    `#token`. vLLM's line has acceptance only, so the sample carries commit alone.
    """
    when = time.time() if t is None else t
    stats = parse_sglang_decode(line)
    if stats is not None:
        tput = stats.gen_throughput if stats.gen_throughput > 0 else None
        tokens_per_step = stats.accept_len if stats.accept_len is not None else 1.0
        return LiveSample(
            t=when,
            source="log",
            tok_s=tput,
            commit_len=stats.accept_len,
            step_time_s=_ratio(tokens_per_step, tput),
            context_tokens=stats.tokens,
            queue=stats.queue_req,
            running=stats.running_req,
        )
    throughput = parse_vllm_throughput(line)
    if throughput is not None:
        # vLLM's periodic throughput line: a wall-clock average over its log interval, so
        # idle time dilutes it (said in the note); no commit length or context. A line for
        # an interval with no generation is no sample.
        if throughput.generation_throughput <= 0:
            return None
        return LiveSample(
            t=when,
            source="log",
            tok_s=throughput.generation_throughput,
            queue=throughput.waiting_req,
            running=throughput.running_req,
            note=WALL_CLOCK_NOTE,
        )
    spec = parse_vllm_spec(line)
    if spec is None or spec.drafted <= 0:
        return None  # not the line, or an interval in which nothing was drafted
    commit = spec.mean_acceptance_length
    if commit is None and spec.per_position:
        # Old vLLM: no mean printed; drafts = drafted tokens / tokens per draft.
        drafts = spec.drafted / len(spec.per_position)
        commit = 1.0 + spec.accepted / drafts
    if commit is None:
        return None
    return LiveSample(t=when, source="log", commit_len=commit)


# -- /metrics -----------------------------------------------------------------------------


def metrics_kind(scrape: MetricsScrape) -> MetricsKind | None:
    """Which engine's exposition this is, by the series it has (ours also exposes SGLang's
    gauges, so ours is checked first)."""
    if scrape.total(OURS_STEPS) is not None:
        return "builtin"
    if scrape.total(VLLM_GENERATED) is not None:
        return "vllm"
    if scrape.total(SGL_THROUGHPUT) is not None:
        return "sglang"
    return None


def sample_from_scrapes(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    """The sample for the interval between two scrapes of one engine, or None when it did
    not decode in it (or its counters went backwards: the engine restarted)."""
    kind = metrics_kind(cur)
    if kind is None or metrics_kind(prev) != kind:
        return None
    if kind == "builtin":
        return _ours(prev, cur)
    if kind == "vllm":
        return _vllm(prev, cur)
    return _sglang(prev, cur)


def _delta(prev: MetricsScrape, cur: MetricsScrape, *names: str) -> float | None:
    a, b = prev.first_of(*names), cur.first_of(*names)
    if a is None or b is None:
        return None
    return b - a


def _ours(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    steps = _delta(prev, cur, OURS_STEPS)
    committed = _delta(prev, cur, OURS_COMMITTED)
    busy = _delta(prev, cur, OURS_STEP_SUM)
    if not steps or steps <= 0 or committed is None or committed < 0:
        return None
    step = _ratio(busy, steps)
    commit = committed / steps
    return LiveSample(
        t=cur.t,
        source="metrics",
        tok_s=_ratio(committed, busy),
        commit_len=commit,
        step_time_s=step,
        context_tokens=_positive_int(cur.total(SGL_USED_TOKENS)),
        queue=_int(cur.total(SGL_QUEUE)),
        running=_int(cur.total(SGL_RUNNING)),
    )


def _vllm(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    generated = _delta(prev, cur, VLLM_GENERATED)
    if generated is None or generated <= 0:
        return None
    drafts = _delta(prev, cur, VLLM_DRAFTS)
    accepted = _delta(prev, cur, VLLM_ACCEPTED)
    commit = None
    if drafts is not None and drafts > 0 and accepted is not None and accepted >= 0:
        commit = 1.0 + accepted / drafts
    busy = _delta(prev, cur, *VLLM_ITL_SUM)
    iterations = _delta(prev, cur, *VLLM_ITL_COUNT)
    note = ""
    if busy is not None and busy > 0 and iterations and iterations > 0:
        step = busy / iterations
        # Per stream: each running request adds its own iterations and latency, so this is
        # the rate one stream sees (the whole batch's rate at concurrency 1).
        tok_s = commit / step if commit is not None else generated / busy
    else:
        step = None
        tok_s = _ratio(generated, cur.t - prev.t)
        note = WALL_CLOCK_NOTE
    if step is None and commit is not None and tok_s:
        step = commit / tok_s
    return LiveSample(
        t=cur.t,
        source="metrics",
        tok_s=tok_s,
        commit_len=commit,
        step_time_s=step,
        queue=_int(cur.total(VLLM_WAITING)),
        running=_int(cur.total(VLLM_RUNNING)),
        note=note,
        spec_source=spec_fields.VLLM_COUNTERS if commit is not None else None,
        per_position=spec_fields.vllm_position_rates(prev, cur),
    )


def _sglang(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    def figures(s: MetricsScrape) -> tuple[float | None, ...]:
        return (s.total(SGL_THROUGHPUT), s.total(SGL_ACCEPT), s.total(SGL_USED_TOKENS))

    now = figures(cur)
    tput = now[0]
    exact = spec_fields.sglang_window_commit(prev, cur)
    # The gauges change only when SGLang logs a decode interval: unchanged gauges mean no
    # new interval, so nothing new to say (however long the engine has been idle), except
    # the exact commit length where the verify-call counter moved in this window.
    if now == figures(prev) or tput is None or tput <= 0:
        if exact is None:
            return None
        return LiveSample(
            t=cur.t,
            source="metrics",
            commit_len=exact[0],
            context_tokens=_positive_int(now[2]),
            queue=_int(cur.total(SGL_QUEUE)),
            running=_int(cur.total(SGL_RUNNING)),
            spec_source=spec_fields.SGLANG_VERIFY_COUNTER,
        )
    accept = now[1] if now[1] is not None and now[1] > 0 else None
    spec_source = spec_fields.SGLANG_GAUGE if accept is not None else None
    if exact is not None:
        accept, spec_source = exact[0], spec_fields.SGLANG_VERIFY_COUNTER
    tokens_per_step = accept if accept is not None else 1.0
    return LiveSample(
        t=cur.t,
        source="metrics",
        tok_s=tput,
        commit_len=accept,
        step_time_s=tokens_per_step / tput,
        context_tokens=_positive_int(now[2]),
        queue=_int(cur.total(SGL_QUEUE)),
        running=_int(cur.total(SGL_RUNNING)),
        note="SGLang's last decode-log interval (gauges)"
        + ("; commit exact over the scrape window" if exact is not None else ""),
        spec_source=spec_source,
    )


# -- the console's own requests -----------------------------------------------------------


def sample_from_request(sample: RequestSample) -> LiveSample:
    """A measured request as a point of the live series (server-side figures where the
    request had them, as `RequestSample` records its own provenance)."""
    context = sample.decode_context
    return LiveSample(
        t=sample.t,
        source="request",
        tok_s=sample.decode_tok_s,
        commit_len=sample.commit_len,
        step_time_s=sample.step_time_s,
        context_tokens=round(context) if context is not None else sample.context_tokens,
        note=sample.flagged or "",
    )
