"""Live samples from vLLM: its periodic throughput and `SpecDecoding metrics` log lines,
or two `/metrics` scrapes (V1 counters; busy time from the inter-token-latency
histogram, so tok/s is a decode rate, not diluted by idle time)."""

from __future__ import annotations

from console.analysis.records import LiveSample
from console.backends.live_figures import WALL_CLOCK_NOTE, as_count, ratio
from console.backends.vllm.logparse import parse_vllm_spec, parse_vllm_throughput
from console.backends.vllm.spec_fields import (
    VLLM_ACCEPTED,
    VLLM_COUNTERS,
    VLLM_DRAFTS,
    vllm_position_rates,
)
from console.backends.wire import MetricsScrape, metrics_delta

VLLM_GENERATED = "vllm:generation_tokens_total"
VLLM_RUNNING = "vllm:num_requests_running"
VLLM_WAITING = "vllm:num_requests_waiting"
# One observation per decode iteration of each request (vllm/v1/metrics/stats.py), so its
# sum is decode busy time per stream; the older name has the same meaning.
VLLM_ITL_SUM = ("vllm:inter_token_latency_seconds_sum", "vllm:time_per_output_token_seconds_sum")
VLLM_ITL_COUNT = (
    "vllm:inter_token_latency_seconds_count",
    "vllm:time_per_output_token_seconds_count",
)
# Finished requests' lengths (one observation per request) and the KV cache in use.
PROMPT_SUM, PROMPT_COUNT = "vllm:request_prompt_tokens_sum", "vllm:request_prompt_tokens_count"
GENERATED_SUM = "vllm:request_generation_tokens_sum"
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
CACHE_INFO = "vllm:cache_config_info"


def _kv_capacity(scrape: MetricsScrape) -> float | None:
    """Tokens the KV cache holds, from `cache_config_info`'s labels (its value is 1)."""
    for sample in scrape.samples.get(CACHE_INFO, []):
        labels = sample.labels
        size = labels.get("kv_cache_size_tokens")
        if size and size.isdigit():
            return float(size)
        blocks, block = labels.get("num_gpu_blocks"), labels.get("block_size")
        if blocks and block and blocks.isdigit() and block.isdigit():
            return float(blocks) * float(block)
    return None


def window_context(prev: MetricsScrape, cur: MetricsScrape) -> tuple[int | None, str]:
    """The decode context of the window and how it was found.

    Requests that finished in the window: their mean prompt plus half their mean output,
    which is how a measured request's decode context is defined (exact). Otherwise the
    KV cache in use at the scrape over the running requests (block-granular: vLLM on CPU
    allocates 128-token blocks); None when nothing runs."""
    finished = metrics_delta(prev, cur, PROMPT_COUNT)
    prompt = metrics_delta(prev, cur, PROMPT_SUM)
    output = metrics_delta(prev, cur, GENERATED_SUM)
    if finished and finished > 0 and prompt is not None and output is not None:
        return round((prompt + output / 2) / finished), ""
    usage, capacity = cur.first_of(*KV_USAGE), _kv_capacity(cur)
    running = cur.total(VLLM_RUNNING)
    if usage and capacity and running and running > 0:
        note = "context from the KV cache in use (block-granular)"
        return round(usage * capacity / running), note
    return None, ""


def sample_from_log_line(line: str, when: float) -> LiveSample | None:
    """The throughput line: a wall-clock average over vLLM's log interval, so idle time
    dilutes it (said in the note); no commit length or context, and an interval with no
    generation is no sample. The spec line has acceptance only: commit alone."""
    throughput = parse_vllm_throughput(line)
    if throughput is not None:
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


def owns_scrape(scrape: MetricsScrape) -> bool:
    return scrape.total(VLLM_GENERATED) is not None


def sample_from_scrapes(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    generated = metrics_delta(prev, cur, VLLM_GENERATED)
    if generated is None or generated <= 0:
        return None
    drafts = metrics_delta(prev, cur, VLLM_DRAFTS)
    accepted = metrics_delta(prev, cur, VLLM_ACCEPTED)
    commit = None
    if drafts is not None and drafts > 0 and accepted is not None and accepted >= 0:
        commit = 1.0 + accepted / drafts
    busy = metrics_delta(prev, cur, *VLLM_ITL_SUM)
    iterations = metrics_delta(prev, cur, *VLLM_ITL_COUNT)
    note = ""
    if busy is not None and busy > 0 and iterations and iterations > 0:
        step = busy / iterations
        # Per stream: each running request adds its own iterations and latency, so this is
        # the rate one stream sees (the whole batch's rate at concurrency 1).
        tok_s = commit / step if commit is not None else generated / busy
    else:
        step = None
        tok_s = ratio(generated, cur.t - prev.t)
        note = WALL_CLOCK_NOTE
    if step is None and commit is not None and tok_s:
        step = commit / tok_s
    context, context_note = window_context(prev, cur)
    return LiveSample(
        t=cur.t,
        source="metrics",
        tok_s=tok_s,
        commit_len=commit,
        step_time_s=step,
        context_tokens=context,
        queue=as_count(cur.total(VLLM_WAITING)),
        running=as_count(cur.total(VLLM_RUNNING)),
        note="; ".join(n for n in (note, context_note) if n),
        spec_source=VLLM_COUNTERS if commit is not None else None,
        per_position=vllm_position_rates(prev, cur),
    )
