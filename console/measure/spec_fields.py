"""The engines' own speculative-decoding figures, under the names measure/ used before each
engine's readers moved into its package (`console/backends/<kind>/spec_fields.py`).

`SpecDetails` is the record every reader fills (`console/backends/spec_details.py`); this
module only gathers the names, so code and notes that say `spec_fields.X` keep working.
"""

from __future__ import annotations

from console.backends.openai import from_openai_body
from console.backends.sglang.spec_fields import (
    SGL_GENERATED,
    SGL_VERIFY_CALLS,
    SGLANG_GAUGE,
    SGLANG_META,
    SGLANG_META_LEGACY,
    SGLANG_META_STEPS,
    SGLANG_SGLEXT,
    SGLANG_VERIFY_COUNTER,
    from_sglang_meta,
    sglang_window_commit,
)
from console.backends.spec_details import SpecDetails, position_rates
from console.backends.vllm.spec_fields import (
    VLLM_ACCEPTED,
    VLLM_COUNTERS,
    VLLM_DRAFT_TOKENS,
    VLLM_DRAFTS,
    VLLM_METRICS_DELTA,
    VLLM_PER_POS,
    VLLM_PER_REQUEST,
    from_vllm_metrics,
    vllm_position_rates,
    vllm_request_delta,
)

__all__ = [
    "SGLANG_GAUGE",
    "SGLANG_META",
    "SGLANG_META_LEGACY",
    "SGLANG_META_STEPS",
    "SGLANG_SGLEXT",
    "SGLANG_VERIFY_COUNTER",
    "SGL_GENERATED",
    "SGL_VERIFY_CALLS",
    "VLLM_ACCEPTED",
    "VLLM_COUNTERS",
    "VLLM_DRAFTS",
    "VLLM_DRAFT_TOKENS",
    "VLLM_METRICS_DELTA",
    "VLLM_PER_POS",
    "VLLM_PER_REQUEST",
    "SpecDetails",
    "from_openai_body",
    "from_sglang_meta",
    "from_vllm_metrics",
    "position_rates",
    "sglang_window_commit",
    "vllm_position_rates",
    "vllm_request_delta",
]
