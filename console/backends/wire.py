"""What engines say on the wire, as plain records: a timed response, a `/metrics` page.

The service's `EngineClient` fills them; the engine adapters read them (a response's
spec-decode fields, a live sample from two scrapes), so they live below both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StreamEvent:
    """One SSE `data:` event and when it arrived (seconds since the request was sent)."""

    t: float
    data: dict[str, Any]


@dataclass
class TimedResponse:
    """A response with the client's timing. `body` is the JSON (non-streamed) or the last
    JSON event of the stream (the one carrying the final meta_info / usage)."""

    status: int
    body: dict[str, Any]
    latency_s: float  # sent -> complete
    events: list[StreamEvent] = field(default_factory=list)
    streamed: bool = False


@dataclass(frozen=True)
class MetricSample:
    name: str  # as exposed, e.g. `vllm:spec_decode_num_drafts_total`
    labels: dict[str, str]
    value: float


@dataclass
class MetricsScrape:
    """One `/metrics` page: every sample by its exposed name, and when it was read."""

    t: float
    samples: dict[str, list[MetricSample]]

    def total(self, name: str) -> float | None:
        """The sum over all label sets of one sample name (None if the engine lacks it)."""
        found = self.samples.get(name)
        return None if not found else sum(s.value for s in found)

    def first_of(self, *names: str) -> float | None:
        for name in names:
            value = self.total(name)
            if value is not None:
                return value
        return None


def parse_metrics(text: str, t: float | None = None) -> MetricsScrape:
    # Imported at the first scrape, not with the console (a tenth of its start-up).
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, list[MetricSample]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, []).append(MetricSample(s.name, dict(s.labels), s.value))
    return MetricsScrape(t=time.time() if t is None else t, samples=samples)


def metrics_delta(prev: MetricsScrape, cur: MetricsScrape, *names: str) -> float | None:
    """How far the first of `names` that both scrapes have moved between them."""
    a, b = prev.first_of(*names), cur.first_of(*names)
    return None if a is None or b is None else b - a
