"""The engines' own speculative-decoding figures, read whichever version wrote them.

Each engine has renamed these fields at least once, and a console pointed at a fleet sees
several versions at once, so every reader here accepts every spelling it knows and says in
`SpecDetails.source` which one it found. Nothing here guesses: a field that is absent stays
None, and the caller falls back to a coarser source (and records that it did).

Per request:
- SGLang `/generate` `meta_info`: `spec_verify_ct` (all versions with speculation), then
  `spec_accept_token_num` / `spec_draft_token_num` / `spec_accept_histogram`, renamed to
  `spec_num_correct_drafts` / `spec_num_proposed_drafts` / `spec_correct_drafts_histogram`
  (the old names kept a while as aliases, and a second alias pair `spec_accepted_drafts` /
  `spec_proposed_drafts`).
- SGLang OpenAI endpoints, with `"return_spec_tokens_details": true` in the request:
  `sglext.spec_tokens_details` carrying the same canonical names.
- vLLM with `--per-request-spec-decode-metrics summary|detailed`: the response's
  `metrics.speculative_decoding` (`num_spec_steps`, `num_accepted_draft_tokens`,
  `num_draft_tokens`, `acceptance_histogram`, and with `detailed` `per_step_accepted`).

Over a window of /metrics scrapes:
- SGLang `sglang:spec_verify_calls_total`: exact commit length = delta of
  `sglang:generation_tokens_total` / delta of verify calls (the gauges
  `sglang:spec_accept_length` only hold the last log interval).
- vLLM `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="k"}`: acceptance at
  draft position k = its delta / delta of `vllm:spec_decode_num_drafts_total`.

All histograms are indexed by accepted draft tokens in one verify step (index j = steps
that accepted exactly j drafts), so commit length with the bonus token is 1 + j.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from console.service.engine_client import MetricsScrape

# Where per-request figures came from (`SpecDetails.source`, `RequestSample.spec_source`).
SGLANG_META = "sglang meta_info"
SGLANG_META_LEGACY = "sglang meta_info (legacy names)"
SGLANG_META_STEPS = "sglang meta_info (verify steps only)"
SGLANG_SGLEXT = "sglang sglext.spec_tokens_details"
VLLM_PER_REQUEST = "vllm metrics.speculative_decoding"
VLLM_METRICS_DELTA = "vllm /metrics deltas"
# Where a live window's commit length came from (`LiveSample.spec_source`).
SGLANG_VERIFY_COUNTER = "sglang:spec_verify_calls_total"
SGLANG_GAUGE = "sglang:spec_accept_length gauge"
VLLM_COUNTERS = "vllm:spec_decode counters"

SGL_GENERATED = "sglang:generation_tokens_total"
SGL_VERIFY_CALLS = "sglang:spec_verify_calls_total"
VLLM_DRAFTS = "vllm:spec_decode_num_drafts_total"
VLLM_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
VLLM_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


@dataclass(frozen=True)
class SpecDetails:
    """One request's (or one window's) speculative-decoding figures and their source."""

    source: str
    verify_steps: int | None = None
    accepted_drafts: int | None = None  # draft tokens the target accepted (no bonus)
    proposed_drafts: int | None = None  # draft tokens offered for verification
    histogram: list[int] | None = None  # [j] = verify steps that accepted exactly j drafts
    per_step_accepted: list[int] | None = None  # vLLM `detailed`: one entry per step, in order
    per_position: list[float] | None = None  # [k] = share of steps accepting draft k
    engine_accept_length: float | None = None  # the engine's own figure, as it defines it

    @property
    def commit_len(self) -> float | None:
        """Committed tokens per verify step including the bonus: 1 + accepted / steps."""
        if self.verify_steps and self.accepted_drafts is not None:
            return 1.0 + self.accepted_drafts / self.verify_steps
        return None

    @property
    def accept_rate(self) -> float | None:
        if self.proposed_drafts and self.accepted_drafts is not None:
            return self.accepted_drafts / self.proposed_drafts
        return None

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["commit_len"] = self.commit_len
        data["accept_rate"] = self.accept_rate
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpecDetails:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _histogram(value: Any) -> list[int] | None:
    if not isinstance(value, list) or not value:
        return None
    counts = [_int(v) for v in value]
    return None if any(c is None or c < 0 for c in counts) else [int(c) for c in counts]  # type: ignore[arg-type]


def _first(data: dict[str, Any], *names: str) -> tuple[Any, str | None]:
    for name in names:
        if data.get(name) is not None:
            return data[name], name
    return None, None


def position_rates(histogram: list[int]) -> list[float] | None:
    """Acceptance at each draft position from a per-step histogram: a chain accepts draft
    k exactly when the step accepted more than k drafts. (Tree drafts have no positions in
    this sense; the share is then that of steps reaching depth k + 1.)"""
    steps = sum(histogram)
    if steps <= 0 or len(histogram) < 2:
        return None
    return [sum(histogram[k + 1 :]) / steps for k in range(len(histogram) - 1)]


# -- per request --------------------------------------------------------------------------


def from_sglang_meta(meta: dict[str, Any], *, source: str | None = None) -> SpecDetails | None:
    """SGLang's spec fields from a `meta_info` (or `sglext.spec_tokens_details`), any
    version; None when the request was not speculative (no verify steps)."""
    steps = _int(meta.get("spec_verify_ct"))
    if not steps:
        return None
    accepted, accepted_name = _first(
        meta, "spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num"
    )
    proposed, _ = _first(
        meta, "spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num"
    )
    raw_hist, hist_name = _first(meta, "spec_correct_drafts_histogram", "spec_accept_histogram")
    histogram = _histogram(raw_hist)
    accepted_n = _int(accepted)
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
        proposed_drafts=_int(proposed),
        histogram=histogram,
        per_position=position_rates(histogram) if histogram else None,
        engine_accept_length=_float(meta.get("spec_accept_length")),
    )


def from_vllm_metrics(metrics: dict[str, Any]) -> SpecDetails | None:
    """vLLM's per-request block (`metrics.speculative_decoding`, from
    `--per-request-spec-decode-metrics`); None when absent or empty."""
    spec = metrics.get("speculative_decoding")
    if not isinstance(spec, dict):
        return None
    steps = _int(spec.get("num_spec_steps"))
    if not steps:
        return None
    histogram = _histogram(spec.get("acceptance_histogram"))
    per_step = spec.get("per_step_accepted")
    accepted = _int(spec.get("num_accepted_draft_tokens"))
    if accepted is None and histogram is not None:
        accepted = sum(j * c for j, c in enumerate(histogram))
    return SpecDetails(
        source=VLLM_PER_REQUEST,
        verify_steps=steps,
        accepted_drafts=accepted,
        proposed_drafts=_int(spec.get("num_draft_tokens")),
        histogram=histogram,
        per_step_accepted=_histogram(per_step) if isinstance(per_step, list) else None,
        per_position=position_rates(histogram) if histogram else None,
        engine_accept_length=_float(spec.get("mean_acceptance_length")),
    )


def from_openai_body(body: dict[str, Any]) -> SpecDetails | None:
    """The per-request spec block of an OpenAI-style response (or the last stream chunk):
    vLLM's `metrics.speculative_decoding`, or SGLang's `sglext.spec_tokens_details` (on the
    response, or on a choice in builds that put it there)."""
    metrics = body.get("metrics")
    if isinstance(metrics, dict):
        found = from_vllm_metrics(metrics)
        if found is not None:
            return found
    carriers = [body, *(c for c in body.get("choices") or [] if isinstance(c, dict))]
    for carrier in carriers:
        ext = carrier.get("sglext")
        details = ext.get("spec_tokens_details") if isinstance(ext, dict) else None
        if isinstance(details, dict):
            found = from_sglang_meta(details, source=SGLANG_SGLEXT)
            if found is not None:
                return found
    return None


def vllm_request_delta(
    before: MetricsScrape | None, after: MetricsScrape | None
) -> SpecDetails | None:
    """A request's figures from vLLM's counters around it (exact at concurrency 1)."""
    if before is None or after is None:
        return None
    drafts = _delta(before, after, VLLM_DRAFTS)
    if not drafts or drafts <= 0:
        return None
    accepted = _delta(before, after, VLLM_ACCEPTED)
    proposed = _delta(before, after, VLLM_DRAFT_TOKENS)
    return SpecDetails(
        source=VLLM_METRICS_DELTA,
        verify_steps=round(drafts),
        accepted_drafts=None if accepted is None else round(accepted),
        proposed_drafts=None if proposed is None else round(proposed),
        per_position=vllm_position_rates(before, after),
    )


# -- /metrics windows ---------------------------------------------------------------------


def _delta(prev: MetricsScrape, cur: MetricsScrape, name: str) -> float | None:
    a, b = prev.total(name), cur.total(name)
    return None if a is None or b is None else b - a


def _by_position(scrape: MetricsScrape) -> dict[int, float]:
    out: dict[int, float] = {}
    for sample in scrape.samples.get(VLLM_PER_POS, []):
        pos = _int(sample.labels.get("position"))
        if pos is not None:  # summed over the other labels (engine = DP rank, model)
            out[pos] = out.get(pos, 0.0) + sample.value
    return out


def vllm_position_rates(prev: MetricsScrape, cur: MetricsScrape) -> list[float] | None:
    """Acceptance at each draft position over the window; None without the counters or
    without drafts in the window."""
    drafts = _delta(prev, cur, VLLM_DRAFTS)
    before, after = _by_position(prev), _by_position(cur)
    if not drafts or drafts <= 0 or not after:
        return None
    return [(after[k] - before.get(k, 0.0)) / drafts for k in sorted(after)]


def sglang_window_commit(prev: MetricsScrape, cur: MetricsScrape) -> tuple[float, float] | None:
    """(commit length, verify calls) over the window from SGLang's counters: exact, with the
    bonus token; None on versions without `spec_verify_calls_total` or with no calls."""
    calls = _delta(prev, cur, SGL_VERIFY_CALLS)
    generated = _delta(prev, cur, SGL_GENERATED)
    if not calls or calls <= 0 or generated is None or generated < 0:
        return None
    return generated / calls, calls
