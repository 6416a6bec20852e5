"""Live server metrics: Prometheus families and the SGLang `Decode batch` log line.

Gauges keep SGLang's names and semantics (`sglang:gen_throughput`, `sglang:spec_accept_length`,
... updated at each decode log, like SGLang's scheduler). SGLang has no speculative
counters, so windowed acceptance is impossible there; ours adds monotonic counters
(`specengine:spec_verify_steps_total`, `specengine:spec_committed_tokens_total`) so that
accept length over any window = Δcommitted / Δverify_steps, and step-time and TTFT
histograms. Everything lives in its own CollectorRegistry (no process/GC collectors, and
tests can build several servers in one process).

Decode-line semantics (SGLang's `Decode batch` line), at our concurrency of 1:
- #token: tokens in the running request's KV cache after the round (prompt + generated);
- token usage: #token / --context-length;
- accept len: committed tokens (accepted drafts + bonus) per verify round over the interval;
- accept rate: committed / (rounds x block size), SGLang's mixin definition;
- gen throughput: tokens generated in the interval / wall time spent decoding in it
  (wall time since the previous line, minus idle time with no request running, so a gap
  between requests does not dilute it).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

logger = logging.getLogger("specengine.server")

STEP_BUCKETS = (
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.03,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    0.75,
    1.0,
    2.0,
    5.0,
)
TTFT_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 60.0)
E2E_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0, 300.0)

METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST


class ServerMetrics:
    def __init__(self, model_name: str):
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ["model_name"]
        r = self.registry

        def g(name, doc):
            return Gauge(name, doc, labels, registry=r).labels(model_name)

        def c(name, doc):
            return Counter(name, doc, labels, registry=r).labels(model_name)

        def h(name, doc, buckets):
            return Histogram(name, doc, labels, buckets=buckets, registry=r).labels(model_name)

        self.gen_throughput = g(
            "sglang:gen_throughput",
            "Generated tokens per second over the last decode-log interval.",
        )
        self.spec_accept_length = g(
            "sglang:spec_accept_length",
            "Committed tokens per verify round (incl. bonus) over the last decode-log interval.",
        )
        self.spec_accept_rate = g(
            "sglang:spec_accept_rate",
            "Committed tokens / (verify rounds x block size) over the last decode-log interval.",
        )
        self.num_running_reqs = g("sglang:num_running_reqs", "Requests being decoded now (0 or 1).")
        self.num_queue_reqs = g("sglang:num_queue_reqs", "Requests waiting for the engine.")
        self.num_used_tokens = g(
            "sglang:num_used_tokens", "Tokens in the running request's KV cache."
        )
        self.token_usage = g("sglang:token_usage", "num_used_tokens / context length.")
        self.max_total_num_tokens = g(
            "sglang:max_total_num_tokens", "KV capacity in tokens (the context length)."
        )
        self.prompt_tokens = c("sglang:prompt_tokens", "Prompt tokens of finished requests.")
        self.generation_tokens = c(
            "sglang:generation_tokens", "Generated tokens of finished requests."
        )
        self.num_requests = c("sglang:num_requests", "Finished requests.")
        self.num_aborted_requests = c(
            "sglang:num_aborted_requests", "Requests aborted (client gone or shutdown)."
        )
        self.spec_verify_steps = c(
            "specengine:spec_verify_steps", "Verify rounds run (decode steps after prefill)."
        )
        self.spec_committed_tokens = c(
            "specengine:spec_committed_tokens",
            "Tokens committed by verify rounds, accepted drafts plus bonus.",
        )
        self.step_time = h(
            "specengine:step_time_seconds",
            "Wall time of one verify round (draft + tree + verify + commit).",
            STEP_BUCKETS,
        )
        self.ttft = h(
            "sglang:time_to_first_token_seconds",
            "From request arrival to its first token (queue + prefill).",
            TTFT_BUCKETS,
        )
        self.e2e = h(
            "sglang:e2e_request_latency_seconds",
            "From request arrival to its last token.",
            E2E_BUCKETS,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


@dataclass
class DecodeLine:
    running: int
    num_tokens: int
    token_usage: float
    accept_len: float | None
    accept_rate: float | None
    gen_throughput: float
    queue: int

    def format(self) -> str:
        msg = (
            f"Decode batch, #running-req: {self.running}, #token: {self.num_tokens}, "
            f"token usage: {self.token_usage:.2f}, "
        )
        if self.accept_len is not None:
            msg += f"accept len: {self.accept_len:.2f}, accept rate: {self.accept_rate:.2f}, "
        msg += (
            f"cpu graph: False, gen throughput (token/s): {self.gen_throughput:.2f}, "
            f"#queue-req: {self.queue}, "
        )
        return msg


class DecodeCounters:
    """Per-interval and lifetime decode counters, and the `Decode batch` line each interval
    ends with (the console parses that line into a record of its own). Called from the
    engine thread only; read (snapshot) from the HTTP thread under a lock."""

    def __init__(
        self,
        metrics: ServerMetrics,
        *,
        interval: int,
        context_length: int,
        block_size: int | None,
        speculative: bool,
    ):
        self.metrics = metrics
        self.interval = interval
        self.context_length = context_length
        self.block_size = block_size or 1
        self.speculative = speculative
        self.lock = threading.Lock()
        self._reset_interval()
        self.total_rounds = 0
        self.total_committed = 0
        self.last_gen_throughput = 0.0
        self.last_accept_length = 0.0
        metrics.max_total_num_tokens.set(context_length)

    def _reset_interval(self) -> None:
        self.iv_rounds = 0
        self.iv_committed = 0
        self.iv_generated = 0
        self.iv_seconds = 0.0

    def on_round(
        self, *, commit_len: int, emitted: int, seconds: float, num_tokens: int, queue: int
    ) -> DecodeLine | None:
        """Record one verify round; returns the decode line when the interval completes."""
        m = self.metrics
        m.spec_verify_steps.inc()
        m.spec_committed_tokens.inc(commit_len)
        m.step_time.observe(seconds)
        m.num_used_tokens.set(num_tokens)
        m.token_usage.set(num_tokens / self.context_length)
        with self.lock:
            self.total_rounds += 1
            self.total_committed += commit_len
            self.iv_rounds += 1
            self.iv_committed += commit_len
            self.iv_generated += emitted
            self.iv_seconds += seconds
            if self.iv_rounds < self.interval:
                return None
            accept = self.iv_committed / self.iv_rounds
            rate = self.iv_committed / (self.iv_rounds * self.block_size)
            tput = self.iv_generated / self.iv_seconds if self.iv_seconds > 0 else 0.0
            self.last_gen_throughput = tput
            self.last_accept_length = accept
            self._reset_interval()
        m.gen_throughput.set(tput)
        if self.speculative:
            m.spec_accept_length.set(accept)
            m.spec_accept_rate.set(rate)
        return DecodeLine(
            running=1,
            num_tokens=num_tokens,
            token_usage=num_tokens / self.context_length,
            accept_len=accept if self.speculative else None,
            accept_rate=rate if self.speculative else None,
            gen_throughput=tput,
            queue=queue,
        )

    def add_wall(self, seconds: float) -> None:
        """Engine time between rounds that belongs to decoding (e.g. per-step bookkeeping)."""
        with self.lock:
            self.iv_seconds += seconds

    def snapshot(self) -> dict:
        with self.lock:
            avg = self.total_committed / self.total_rounds if self.total_rounds else 0.0
            return {
                "last_gen_throughput": self.last_gen_throughput,
                "avg_spec_accept_length": avg if self.speculative else None,
                "spec_verify_steps": self.total_rounds,
                "spec_committed_tokens": self.total_committed,
            }
