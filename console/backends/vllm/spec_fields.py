"""vLLM's own speculative-decoding figures: per request and over a window of scrapes.

Per request, with `--per-request-spec-decode-metrics summary|detailed`: the response's
`metrics.speculative_decoding` (`num_spec_steps`, `num_accepted_draft_tokens`,
`num_draft_tokens`, `acceptance_histogram`, and with `detailed` `per_step_accepted`).
Without it, the counters around one request at concurrency 1 are that request's.

Over a window: `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="k"}` gives the
acceptance at draft position k = its delta / delta of `vllm:spec_decode_num_drafts_total`.
"""

from __future__ import annotations

from typing import Any

from console.backends.spec_details import (
    SpecDetails,
    as_float,
    as_histogram,
    as_int,
    position_rates,
)
from console.backends.wire import MetricsScrape, metrics_delta

VLLM_PER_REQUEST = "vllm metrics.speculative_decoding"
VLLM_METRICS_DELTA = "vllm /metrics deltas"
VLLM_COUNTERS = "vllm:spec_decode counters"  # a live window's commit length

VLLM_DRAFTS = "vllm:spec_decode_num_drafts_total"
VLLM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
VLLM_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


def from_vllm_metrics(metrics: dict[str, Any]) -> SpecDetails | None:
    """vLLM's per-request block (`metrics.speculative_decoding`, from
    `--per-request-spec-decode-metrics`); None when absent or empty."""
    spec = metrics.get("speculative_decoding")
    if not isinstance(spec, dict):
        return None
    steps = as_int(spec.get("num_spec_steps"))
    if not steps:
        return None
    histogram = as_histogram(spec.get("acceptance_histogram"))
    per_step = spec.get("per_step_accepted")
    accepted = as_int(spec.get("num_accepted_draft_tokens"))
    if accepted is None and histogram is not None:
        accepted = sum(j * c for j, c in enumerate(histogram))
    return SpecDetails(
        source=VLLM_PER_REQUEST,
        verify_steps=steps,
        accepted_drafts=accepted,
        proposed_drafts=as_int(spec.get("num_draft_tokens")),
        histogram=histogram,
        per_step_accepted=as_histogram(per_step) if isinstance(per_step, list) else None,
        per_position=position_rates(histogram) if histogram else None,
        engine_accept_length=as_float(spec.get("mean_acceptance_length")),
    )


def vllm_request_delta(
    before: MetricsScrape | None, after: MetricsScrape | None
) -> SpecDetails | None:
    """A request's figures from vLLM's counters around it (exact at concurrency 1)."""
    if before is None or after is None:
        return None
    drafts = metrics_delta(before, after, VLLM_DRAFTS)
    if not drafts or drafts <= 0:
        return None
    accepted = metrics_delta(before, after, VLLM_ACCEPTED)
    proposed = metrics_delta(before, after, VLLM_DRAFT_TOKENS)
    return SpecDetails(
        source=VLLM_METRICS_DELTA,
        verify_steps=round(drafts),
        accepted_drafts=None if accepted is None else round(accepted),
        proposed_drafts=None if proposed is None else round(proposed),
        per_position=vllm_position_rates(before, after),
    )


def _by_position(scrape: MetricsScrape) -> dict[int, float]:
    out: dict[int, float] = {}
    for sample in scrape.samples.get(VLLM_PER_POS, []):
        pos = as_int(sample.labels.get("position"))
        if pos is not None:  # summed over the other labels (engine = DP rank, model)
            out[pos] = out.get(pos, 0.0) + sample.value
    return out


def vllm_position_rates(prev: MetricsScrape, cur: MetricsScrape) -> list[float] | None:
    """Acceptance at each draft position over the window; None without the counters or
    without drafts in the window."""
    drafts = metrics_delta(prev, cur, VLLM_DRAFTS)
    before, after = _by_position(prev), _by_position(cur)
    if not drafts or drafts <= 0 or not after:
        return None
    return [(after[k] - before.get(k, 0.0)) / drafts for k in sorted(after)]
