"""Live samples from our engine's `/metrics`: monotonic counters plus a step-time
histogram, so tok/s over a scrape interval is committed tokens / busy seconds. (Its log
line is SGLang's `Decode batch` line, read by `sglang/live.py`.)"""

from __future__ import annotations

from console.analysis.records import LiveSample
from console.backends.live_figures import as_count, positive_count, ratio
from console.backends.sglang.live import SGL_QUEUE, SGL_RUNNING, SGL_USED_TOKENS
from console.backends.wire import MetricsScrape, metrics_delta

OURS_STEPS = "specengine:spec_verify_steps_total"
OURS_COMMITTED = "specengine:spec_committed_tokens_total"
OURS_STEP_SUM = "specengine:step_time_seconds_sum"
OURS_STEP_COUNT = "specengine:step_time_seconds_count"


def owns_scrape(scrape: MetricsScrape) -> bool:
    return scrape.total(OURS_STEPS) is not None


def sample_from_scrapes(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    steps = metrics_delta(prev, cur, OURS_STEPS)
    committed = metrics_delta(prev, cur, OURS_COMMITTED)
    busy = metrics_delta(prev, cur, OURS_STEP_SUM)
    if not steps or steps <= 0 or committed is None or committed < 0:
        return None
    return LiveSample(
        t=cur.t,
        source="metrics",
        tok_s=ratio(committed, busy),
        commit_len=committed / steps,
        step_time_s=ratio(busy, steps),
        context_tokens=positive_count(cur.total(SGL_USED_TOKENS)),
        queue=as_count(cur.total(SGL_QUEUE)),
        running=as_count(cur.total(SGL_RUNNING)),
    )
