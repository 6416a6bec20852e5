"""What vLLM needs for the console to read it: `/metrics` is always served; the
spec-decode counters appear once speculation is configured; the methods that draft with
a model of their own need it named in `--speculative-config`."""

from __future__ import annotations

from console.backends.vllm.spec_fields import VLLM_ACCEPTED, VLLM_DRAFTS

# Methods whose drafts come from a separate model (ngram and suffix draft from the
# context; the MTP methods read the draft layers from the target's checkpoint).
DRAFTER_METHODS = frozenset(
    {"eagle", "eagle3", "draft_model", "dflash", "medusa", "mlp_speculator"}
)
DRAFTER_WHERE = 'drafter ("model" in --speculative-config)'

SPEC_COUNTERS = (VLLM_DRAFTS, VLLM_ACCEPTED)
COUNTERS_MISSING = (
    "vLLM exposes its spec-decode counters only while a speculative config is loaded, so "
    "there is no live commit length"
)
COUNTERS_FIX = "set --speculative-config (`specconsole flags HOST` shows it)"
