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
    """The interval's figures. The verify-step counter counts request-rounds (a round of
    a batch of 4 is 4) and the step histogram one observation a round, so commit is per
    stream and round, step the round's own time, batch their ratio, and tok/s the
    committed tokens over the busy time: the aggregate over the streams."""
    steps = metrics_delta(prev, cur, OURS_STEPS)
    committed = metrics_delta(prev, cur, OURS_COMMITTED)
    busy = metrics_delta(prev, cur, OURS_STEP_SUM)
    rounds = metrics_delta(prev, cur, OURS_STEP_COUNT)
    if not steps or steps <= 0 or committed is None or committed < 0:
        return None
    rounds = rounds if rounds and 0 < rounds <= steps else steps  # an older engine: 1 a round
    return LiveSample(
        t=cur.t,
        source="metrics",
        tok_s=ratio(committed, busy),
        commit_len=committed / steps,
        step_time_s=ratio(busy, rounds),
        batch=steps / rounds,
        context_tokens=positive_count(cur.total(SGL_USED_TOKENS)),
        queue=as_count(cur.total(SGL_QUEUE)),
        running=as_count(cur.total(SGL_RUNNING)),
    )
