"""SGLang's own speculative-decoding figures, read whichever version wrote them.

Per request: `/generate` `meta_info` has `spec_verify_ct` (all versions with
speculation), then `spec_accept_token_num` / `spec_draft_token_num` /
`spec_accept_histogram`, renamed to `spec_num_correct_drafts` / `spec_num_proposed_drafts`
/ `spec_correct_drafts_histogram` (the old names kept a while as aliases, and a second
alias pair `spec_accepted_drafts` / `spec_proposed_drafts`). Its OpenAI endpoints, with
`"return_spec_tokens_details": true`, carry the same canonical names in
`sglext.spec_tokens_details`.

Over a window of /metrics scrapes: `sglang:spec_verify_calls_total` gives the exact commit
length = delta of `sglang:generation_tokens_total` / delta of verify calls (the gauge
`sglang:spec_accept_length` only holds the last log interval).
"""

from __future__ import annotations

from typing import Any

from console.backends.spec_details import (
    SpecDetails,
    as_float,
    as_histogram,
    as_int,
    first_present,
    position_rates,
)
from console.backends.wire import MetricsScrape, metrics_delta

# Where per-request figures came from (`SpecDetails.source`, `RequestSample.spec_source`).
SGLANG_META = "sglang meta_info"
SGLANG_META_LEGACY = "sglang meta_info (legacy names)"
SGLANG_META_STEPS = "sglang meta_info (verify steps only)"
SGLANG_SGLEXT = "sglang sglext.spec_tokens_details"
# Where a live window's commit length came from (`LiveSample.spec_source`).
SGLANG_VERIFY_COUNTER = "sglang:spec_verify_calls_total"
SGLANG_GAUGE = "sglang:spec_accept_length gauge"

SGL_GENERATED = "sglang:generation_tokens_total"
SGL_VERIFY_CALLS = "sglang:spec_verify_calls_total"


def from_sglang_meta(meta: dict[str, Any], *, source: str | None = None) -> SpecDetails | None:
    """SGLang's spec fields from a `meta_info` (or `sglext.spec_tokens_details`), any
    version; None when the request was not speculative (no verify steps)."""
    steps = as_int(meta.get("spec_verify_ct"))
    if not steps:
        return None
    accepted, accepted_name = first_present(
        meta, "spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num"
    )
    proposed, _ = first_present(
        meta, "spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num"
    )
    raw_hist, hist_name = first_present(
        meta, "spec_correct_drafts_histogram", "spec_accept_histogram"
    )
    histogram = as_histogram(raw_hist)
    accepted_n = as_int(accepted)
    if accepted_n is None and histogram is not None:
        accepted_n = sum(j * c for j, c in enumerate(histogram))
    if source is None:
        canonical = "spec_num_correct_drafts" in meta or "spec_correct_drafts_histogram" in meta
        if canonical:
            source = SGLANG_META
        elif accepted_name or hist_name:
            source = SGLANG_META_LEGACY
        else:
            source = SGLANG_META_STEPS
    return SpecDetails(
        source=source,
        verify_steps=steps,
        accepted_drafts=accepted_n,
        proposed_drafts=as_int(proposed),
        histogram=histogram,
        per_position=position_rates(histogram) if histogram else None,
        engine_accept_length=as_float(meta.get("spec_accept_length")),
    )


def from_sglext(body: dict[str, Any]) -> SpecDetails | None:
    """SGLang's `sglext.spec_tokens_details` of an OpenAI-style response (on the response,
    or on a choice in builds that put it there)."""
    carriers = [body, *(c for c in body.get("choices") or [] if isinstance(c, dict))]
    for carrier in carriers:
        ext = carrier.get("sglext")
        details = ext.get("spec_tokens_details") if isinstance(ext, dict) else None
        if isinstance(details, dict):
            found = from_sglang_meta(details, source=SGLANG_SGLEXT)
            if found is not None:
                return found
    return None


def sglang_window_commit(prev: MetricsScrape, cur: MetricsScrape) -> tuple[float, float] | None:
    """(commit length, verify calls) over the window from SGLang's counters: exact, with the
    bonus token; None on versions without `spec_verify_calls_total` or with no calls."""
    calls = metrics_delta(prev, cur, SGL_VERIFY_CALLS)
    generated = metrics_delta(prev, cur, SGL_GENERATED)
    if not calls or calls <= 0 or generated is None or generated < 0:
        return None
    return generated / calls, calls
