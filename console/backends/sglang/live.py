"""Live samples from SGLang: its `Decode batch` log line, or two `/metrics` scrapes of its
gauges (and, where it exists, the exact `sglang:spec_verify_calls_total` counter).

Older SGLang has no speculative counters, only gauges it refreshes every decode-log
interval; a scrape there yields its last-interval figures, once per refresh. Where
`sglang:spec_verify_calls_total` exists the commit length is exact over the scrape window
instead (tokens / verify calls), and `spec_source` says which one a sample holds.
"""

from __future__ import annotations

from console.analysis.records import LiveSample
from console.backends.live_figures import as_count, positive_count, ratio
from console.backends.sglang.logparse import parse_sglang_decode
from console.backends.sglang.spec_fields import (
    SGLANG_GAUGE,
    SGLANG_VERIFY_COUNTER,
    sglang_window_commit,
)
from console.backends.wire import MetricsScrape

# SGLang gauges (ours exposes them too, with the same meaning).
SGL_THROUGHPUT = "sglang:gen_throughput"
SGL_ACCEPT = "sglang:spec_accept_length"
SGL_USED_TOKENS = "sglang:num_used_tokens"
SGL_QUEUE = "sglang:num_queue_reqs"
SGL_RUNNING = "sglang:num_running_reqs"


def sample_from_decode_line(line: str, when: float) -> LiveSample | None:
    """tok/s = gen throughput, commit = accept len, step = accept len / gen throughput
    (1 / gen throughput when speculation is off: one token per step), context = `#token`.
    SGLang's `Prefill batch` input throughput is a prefill rate, not a decode figure."""
    stats = parse_sglang_decode(line)
    if stats is None:
        return None
    tput = stats.gen_throughput if stats.gen_throughput > 0 else None
    tokens_per_step = stats.accept_len if stats.accept_len is not None else 1.0
    return LiveSample(
        t=when,
        source="log",
        tok_s=tput,
        commit_len=stats.accept_len,
        step_time_s=ratio(tokens_per_step, tput),
        context_tokens=stats.tokens,
        queue=stats.queue_req,
        running=stats.running_req,
    )


def owns_scrape(scrape: MetricsScrape) -> bool:
    return scrape.total(SGL_THROUGHPUT) is not None


def sample_from_scrapes(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    def figures(s: MetricsScrape) -> tuple[float | None, ...]:
        return (s.total(SGL_THROUGHPUT), s.total(SGL_ACCEPT), s.total(SGL_USED_TOKENS))

    now = figures(cur)
    tput = now[0]
    exact = sglang_window_commit(prev, cur)
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
            context_tokens=positive_count(now[2]),
            queue=as_count(cur.total(SGL_QUEUE)),
            running=as_count(cur.total(SGL_RUNNING)),
            spec_source=SGLANG_VERIFY_COUNTER,
        )
    accept = now[1] if now[1] is not None and now[1] > 0 else None
    spec_source = SGLANG_GAUGE if accept is not None else None
    if exact is not None:
        accept, spec_source = exact[0], SGLANG_VERIFY_COUNTER
    tokens_per_step = accept if accept is not None else 1.0
    return LiveSample(
        t=cur.t,
        source="metrics",
        tok_s=tput,
        commit_len=accept,
        step_time_s=tokens_per_step / tput,
        context_tokens=positive_count(now[2]),
        queue=as_count(cur.total(SGL_QUEUE)),
        running=as_count(cur.total(SGL_RUNNING)),
        note="SGLang's last decode-log interval (gauges)"
        + ("; commit exact over the scrape window" if exact is not None else ""),
        spec_source=spec_source,
    )
