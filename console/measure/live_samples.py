"""Turning what an engine says about itself into `LiveSample`s: one log line, or the
difference between two `/metrics` scrapes, or one of the console's own measured requests.

Each engine's adapter reads its own lines and scrapes (`console/backends/<kind>/live.py`);
this module asks every adapter in turn, so `watch` needs to know no engine kind. These
are pure functions so the arithmetic can be checked against each engine's real formats
without a running engine. The rules every adapter follows:

- A sample exists only when decoding happened. A scrape pair with no verify steps (or no
  generated tokens) while the engine idles gives nothing, not a row of zeros that would
  drag a chart's average down.
- tok/s is a decode rate, never diluted by idle time. Our engine and vLLM expose busy time
  as a histogram sum (step time, inter-token latency), so tok/s over a scrape interval is
  tokens / busy seconds, not tokens / wall seconds. Only where an engine has no busy-time
  series does the wall clock stand in, and the sample's note says so.
- Commit length includes the bonus token everywhere (SGLang's `accept len`, vLLM's
  `1 + accepted / drafts`, our committed / verify steps), so `tok/s = commit / step time`.
- Older SGLang has no speculative counters, only gauges it refreshes every decode-log
  interval; a scrape there yields its last-interval figures, once per refresh (see
  `console/backends/sglang/live.py`).
"""

from __future__ import annotations

import time

from console.analysis.records import LiveSample, RequestSample
from console.backends import EngineAdapter, all_adapters
from console.backends.live_figures import WALL_CLOCK_NOTE
from console.backends.wire import MetricsScrape

__all__ = [
    "WALL_CLOCK_NOTE",
    "metrics_kind",
    "sample_from_log_line",
    "sample_from_request",
    "sample_from_scrapes",
]

_ADAPTERS = all_adapters()


def sample_from_log_line(line: str, t: float | None = None) -> LiveSample | None:
    """A sample from any engine's decode-figure log line (SGLang's and our `Decode batch`,
    vLLM's `Avg prompt throughput ...` and `SpecDecoding metrics`); None for every other
    line."""
    when = time.time() if t is None else t
    for adapter in _ADAPTERS:
        sample = adapter.live_from_log(line, when)
        if sample is not None:
            return sample
    return None


def scrape_adapter(scrape: MetricsScrape) -> EngineAdapter | None:
    """The adapter whose exposition this is, by the series it has (asked in the order of
    `console.backends.ADAPTERS`: ours also exposes SGLang's gauges, so ours comes first)."""
    return next((a for a in _ADAPTERS if a.owns_scrape(scrape)), None)


def metrics_kind(scrape: MetricsScrape) -> str | None:
    """Which engine kind's exposition this is."""
    adapter = scrape_adapter(scrape)
    return adapter.kind if adapter is not None else None


def sample_from_scrapes(prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
    """The sample for the interval between two scrapes of one engine, or None when it did
    not decode in it (or its counters went backwards: the engine restarted)."""
    adapter = scrape_adapter(cur)
    if adapter is None or scrape_adapter(prev) is not adapter:
        return None
    return adapter.live_from_scrapes(prev, cur)


# -- the console's own requests -----------------------------------------------------------


def sample_from_request(sample: RequestSample) -> LiveSample:
    """A measured request as a point of the live series (server-side figures where the
    request had them, as `RequestSample` records its own provenance)."""
    context = sample.decode_context
    return LiveSample(
        t=sample.t,
        source="request",
        tok_s=sample.decode_tok_s,
        commit_len=sample.commit_len,
        step_time_s=sample.step_time_s,
        context_tokens=round(context) if context is not None else sample.context_tokens,
        note=sample.flagged or "",
    )
