"""What SGLang needs for the console to read it: `--enable-metrics` for `/metrics`, a
drafter for the methods that draft with a model of their own, and the exact verify-call
counter (SGLang releases before it have the last decode interval's gauge only)."""

from __future__ import annotations

from console.backends.advice import FlagAdvice
from console.backends.sglang.spec_fields import SGL_VERIFY_CALLS
from console.config import FlagValue

METRICS_FLAG = "enable-metrics"
# Methods whose drafts come from a separate model (NGRAM drafts from the context; NEXTN
# and MTP read the draft layers from the target's own checkpoint).
DRAFTER_METHODS = frozenset({"EAGLE", "EAGLE3", "STANDALONE", "DFLASH", "DDTREE"})
DRAFTER_WHERE = "drafter (--speculative-draft-model-path)"

SPEC_COUNTERS = (SGL_VERIFY_CALLS,)
COUNTERS_MISSING = (
    "this SGLang has no exact verify-call counter, so the live commit length comes from "
    "the sglang:spec_accept_length gauge (the last decode-log interval's)"
)
COUNTERS_FIX = "a newer SGLang (with sglang:spec_verify_calls_total) makes it exact"


def metrics_advice(flags: dict[str, FlagValue]) -> FlagAdvice | None:
    """SGLang serves `/metrics` only when started with `--enable-metrics`."""
    if flags.get(METRICS_FLAG) in (True, "true", "True", "1"):
        return None
    return FlagAdvice(
        "SGLang serves no /metrics without --enable-metrics, which the launch config lacks",
        {METRICS_FLAG: "true"},
    )
