"""The engine loop: one thread owns the model and serves requests one at a time.

Why one thread and FIFO: decoding is single-sequence (the case operators measure is
concurrency 1), torch work must never run on the asyncio event loop, and a single owner
needs no locks around the model or its caches. Waiting requests sit in a deque that
/metrics reports as `sglang:num_queue_reqs`. A request is cancelled (client gone, server
shutting down) by setting its flag; the loop checks it between verify rounds and closes
the decoder's generator, which frees the request's caches.

Results and streamed deltas go back through callbacks that the HTTP side binds to its
event loop with `call_soon_threadsafe`.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.sampling import GREEDY, SamplingSettings
from engine.serve.detokenizer import IncrementalDetokenizer
from engine.serve.metrics import DecodeCounters, ServerMetrics

logger = logging.getLogger("specengine.server")

_ids = itertools.count(1)


@dataclass
class GenParams:
    prompt_ids: list[int]
    max_new_tokens: int
    ignore_eos: bool = False
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    skip_special_tokens: bool = True  # False: special tokens are in the text (not the final EOS)
    sampling: SamplingSettings = GREEDY


@dataclass
class Delta:
    """A streamed piece of output: new text and the cumulative counters after it."""

    text: str
    completion_tokens: int
    verify_ct: int


@dataclass(kw_only=True)
class JobResult:
    """How a job ended. Built by keyword: a finished decode fills every field; a job that
    produced nothing comes from `aborted` or `refused`."""

    rid: str
    prompt_tokens: int
    output_ids: list[int]
    text: str
    finish_reason: str  # "stop" | "length" | "abort"
    matched_stop: str | int | None  # the stop string, or the EOS id, that ended it
    rounds: list  # engine.decode.RoundStats, one per verify round
    t_received: float
    t_started: float
    t_first_token: float | None
    t_finished: float
    prefill_ms: float
    error: str | None = None
    client_error: bool = False  # error caused by the request (-> 400), else a bug (-> 500)

    @classmethod
    def aborted(
        cls, job: Job, error: str, *, t_started: float, t_finished: float | None = None
    ) -> JobResult:
        """A job that ends without output: cancelled before it ran, or an engine bug."""
        return cls(
            rid=job.rid,
            prompt_tokens=len(job.params.prompt_ids),
            output_ids=[],
            text="",
            finish_reason="abort",
            matched_stop=None,
            rounds=[],
            t_received=job.t_received,
            t_started=t_started,
            t_first_token=None,
            t_finished=t_started if t_finished is None else t_finished,
            prefill_ms=0.0,
            error=error,
        )

    @classmethod
    def refused(cls, job: Job, error: str, *, t_started: float) -> JobResult:
        """The engine refused the request itself before its first token: the client's fault."""
        result = cls.aborted(job, error, t_started=t_started, t_finished=time.perf_counter())
        result.client_error = True
        return result

    @property
    def completion_tokens(self) -> int:
        return len(self.output_ids)

    @property
    def verify_ct(self) -> int:
        return len(self.rounds)

    @property
    def decode_time(self) -> float:
        """Server-side decode seconds: first token (end of prefill) to last token."""
        if self.t_first_token is None:
            return 0.0
        return max(0.0, self.t_finished - self.t_first_token)

    def meta_info(self, *, commit_lengths: bool = False, round_stats: bool = False) -> dict:
        n, s = self.completion_tokens, self.verify_ct
        decode = self.decode_time
        if self.finish_reason == "length":
            finish: dict[str, Any] = {"type": "length", "length": n}
        elif self.finish_reason == "stop":
            finish = {"type": "stop", "matched": self.matched_stop}
        else:
            finish = {"type": "abort", "message": self.error or "request aborted"}
        meta: dict[str, Any] = {
            "id": self.rid,
            "finish_reason": finish,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": n,
            "cached_tokens": 0,
            "spec_verify_ct": s,
            # SGLang's per-request convention: completion_tokens / verify steps (the
            # prefill's token is in the numerator).
            "spec_accept_length": (n / s) if s else 0.0,
            # Per-round mean commit length over verify rounds only (tau; the prefill's token
            # is not in it).
            "spec_commit_mean": (sum(r.commit_len for r in self.rounds) / s) if s else 0.0,
            "e2e_latency": self.t_finished - self.t_received,
            "queue_time": self.t_started - self.t_received,
            "ttft": (self.t_first_token - self.t_received) if self.t_first_token else None,
            "prefill_time": self.prefill_ms / 1000.0,
            "decode_time": decode,
            "decode_throughput": ((n - 1) / decode) if decode > 0 and n > 1 else 0.0,
            "step_time_mean": (decode / s) if s else 0.0,
        }
        if commit_lengths:
            meta["commit_lengths"] = [r.commit_len for r in self.rounds]
        if round_stats:
            meta["round_stats"] = [
                {
                    "commit_len": r.commit_len,
                    "context_len": r.context_len,
                    "draft_ms": r.draft_ms,
                    "tree_ms": r.tree_ms,
                    "verify_ms": r.verify_ms,
                    "commit_ms": r.commit_ms,
                    "step_ms": r.step_ms,
                    "tree_nodes": r.tree_nodes,
                }
                for r in self.rounds
            ]
        return meta


class Job:
    def __init__(
        self,
        params: GenParams,
        *,
        on_done: Callable[[JobResult], None],
        on_delta: Callable[[Delta], None] | None = None,
        rid: str | None = None,
        t_received: float | None = None,
        count_in_metrics: bool = True,
    ):
        self.rid = rid or f"req-{next(_ids)}"
        self.params = params
        self.on_done = on_done
        self.on_delta = on_delta
        self.t_received = t_received if t_received is not None else time.perf_counter()
        self.cancelled = threading.Event()
        self.cancel_reason = "client disconnected"
        self.count_in_metrics = count_in_metrics

    def cancel(self, reason: str = "client disconnected") -> None:
        self.cancel_reason = reason
        self.cancelled.set()


class ShuttingDown(RuntimeError):
    pass


class EngineWorker:
    def __init__(
        self,
        decoder,
        tokenizer,
        *,
        metrics: ServerMetrics,
        counters: DecodeCounters,
        eos_token_ids: tuple[int, ...],
        round_delay_s: float = 0.0,
        round_slowdown: float = 0.0,
    ):
        self.decoder = decoder
        # injected step time: --debug-round-delay-ms (fixed) and --debug-round-slowdown (a
        # share of the round's own compute, so the regression's relative size holds however
        # fast or slow the host runs that minute)
        self.round_delay_s = round_delay_s
        self.round_slowdown = round_slowdown
        self._owed = 0.0  # what the last sleeps overran: the next ones pay it back
        self.tokenizer = tokenizer
        self.metrics = metrics
        self.counters = counters
        self.eos_token_ids = eos_token_ids
        self._queue: collections.deque[Job] = collections.deque()
        self._cond = threading.Condition()
        self._stopping = False
        self.current: Job | None = None
        self.thread = threading.Thread(target=self._loop, name="engine-loop", daemon=True)

    # -- HTTP side -------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def submit(self, job: Job) -> None:
        with self._cond:
            if self._stopping:
                raise ShuttingDown("the server is shutting down")
            self._queue.append(job)
            self.metrics.num_queue_reqs.set(len(self._queue))
            self._cond.notify()

    def cancel(self, job: Job, reason: str = "client disconnected") -> None:
        """Cancel a queued or running job; a queued one is finished (aborted) right away."""
        job.cancel(reason)
        with self._cond:
            try:
                self._queue.remove(job)
            except ValueError:
                return  # running (the loop will notice) or already done
            self.metrics.num_queue_reqs.set(len(self._queue))
        self._finish_unstarted(job, reason)

    @property
    def queue_len(self) -> int:
        return len(self._queue)

    @property
    def running(self) -> int:
        return 1 if self.current is not None else 0

    def shutdown(self, *, abort: bool = True) -> None:
        """Stop taking requests; abort the running one between rounds and every queued one."""
        with self._cond:
            self._stopping = True
            pending = list(self._queue)
            self._queue.clear()
            self.metrics.num_queue_reqs.set(0)
            if abort and self.current is not None:
                self.current.cancel("the server is shutting down")
            self._cond.notify_all()
        for job in pending:
            job.cancel("the server is shutting down")
            self._finish_unstarted(job, "the server is shutting down")

    def join(self, timeout: float | None = None) -> None:
        if self.thread.is_alive():
            self.thread.join(timeout)

    # -- engine thread ---------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                job = self._queue.popleft()
                self.current = job
                self.metrics.num_queue_reqs.set(len(self._queue))
            self.metrics.num_running_reqs.set(1)
            try:
                result = self._run(job)
            except Exception as e:  # a bug in the engine: report it, keep serving
                logger.exception("engine error on request %s", job.rid)
                result = JobResult.aborted(
                    job, f"{type(e).__name__}: {e}", t_started=time.perf_counter()
                )
            finally:
                self.current = None
                self.metrics.num_running_reqs.set(0)
                self.metrics.num_used_tokens.set(0)
                self.metrics.token_usage.set(0)
            self._record(job, result)
            self._deliver_done(job, result)

    def _run(self, job: Job) -> JobResult:
        """Decode one job to its end: a stop, the length limit, or a cancel between rounds."""
        p = job.params
        t_started = time.perf_counter()
        if job.cancelled.is_set():
            return JobResult.aborted(job, job.cancel_reason, t_started=t_started)
        decoding = _Decoding(job, self.tokenizer, self.eos_token_ids, t_started)
        gen = self.decoder.stream(
            p.prompt_ids,
            max_new_tokens=p.max_new_tokens,
            eos_token_ids=self.eos_token_ids,
            ignore_eos=p.ignore_eos,
            sampling=p.sampling,
        )
        try:
            while True:
                if job.cancelled.is_set():
                    decoding.finish = "abort"
                    break
                t_round = time.perf_counter()
                try:
                    step = next(gen)
                except StopIteration:
                    break
                except ValueError as e:
                    if decoding.t_first is None:  # the engine refused the request itself
                        return JobResult.refused(job, str(e), t_started=t_started)
                    raise
                if step.stats is not None:
                    self._inject(time.perf_counter() - t_round)  # inside the round's wall time
                t = time.perf_counter()
                emitted = decoding.add(step, t)
                if step.stats is not None and job.count_in_metrics:
                    self._count_round(decoding, step.stats.commit_len, emitted, t - decoding.t_prev)
                decoding.t_prev = t
                decoding.send_delta()
                if decoding.done:
                    break
        finally:
            gen.close()
        return decoding.result()

    def _inject(self, computed_s: float) -> None:
        """The debug flags' extra step time for a round that computed for `computed_s`.
        A sleep overshoots by its wake-up latency (0.1-0.4 ms here: +40% step time for a
        +30% slowdown of 4 ms rounds), so what each sleep overran is owed back by the
        next: over a request the extra time is the flags' own, within one overshoot."""
        extra = self.round_delay_s + self.round_slowdown * computed_s
        if extra <= 0:
            return
        self._owed += extra
        if self._owed <= 0:
            return  # the last sleeps overran by more than this round's share
        started = time.perf_counter()
        time.sleep(self._owed)
        self._owed -= time.perf_counter() - started

    def _count_round(self, decoding: _Decoding, commit_len: int, emitted: int, seconds: float):
        """Metrics for one verify round, and the `Decode batch` line when an interval ends."""
        line = self.counters.on_round(
            commit_len=commit_len,
            emitted=emitted,
            seconds=seconds,
            num_tokens=len(decoding.params.prompt_ids) + len(decoding.out),
            queue=len(self._queue),
        )
        if line is not None:
            logger.info(line.format())

    def _finish_unstarted(self, job: Job, reason: str) -> None:
        result = JobResult.aborted(job, reason, t_started=time.perf_counter())
        self._record(job, result)
        self._deliver_done(job, result)

    def _record(self, job: Job, result: JobResult) -> None:
        if not job.count_in_metrics:
            return
        m = self.metrics
        if result.finish_reason == "abort":
            m.num_aborted_requests.inc()
        if result.error and result.finish_reason == "abort" and not result.output_ids:
            return
        m.num_requests.inc()
        m.prompt_tokens.inc(result.prompt_tokens)
        m.generation_tokens.inc(result.completion_tokens)
        if result.t_first_token is not None:
            m.ttft.observe(result.t_first_token - result.t_received)
            m.e2e.observe(result.t_finished - result.t_received)

    @staticmethod
    def _deliver_done(job: Job, result: JobResult) -> None:
        try:
            job.on_done(result)
        except Exception:  # the HTTP side went away (loop closed); nothing to deliver to
            logger.debug("could not deliver result of %s", job.rid, exc_info=True)


class _Decoding:
    """One job in flight on the engine thread: the tokens kept so far, their text (cut at a
    stop string), the verify rounds, and the deltas its stream is sent.

    Text is detokenized as the tokens arrive only when something needs it early (stop
    strings or a stream); otherwise once, at the end.
    """

    def __init__(self, job: Job, tokenizer, eos_token_ids: tuple[int, ...], t_started: float):
        p = job.params
        self.job = job
        self.params = p
        self.tokenizer = tokenizer
        self.eos_token_ids = eos_token_ids
        # The EOS that ends a request is not part of its text (SGLang trims the matched stop
        # token); with skip_special_tokens it decodes to nothing anyway.
        self.eos_ends = () if p.ignore_eos else eos_token_ids
        self.detok = (
            IncrementalDetokenizer(tokenizer, p.stop, skip_special_tokens=p.skip_special_tokens)
            if (p.stop or p.stream)
            else None
        )
        self.out: list[int] = []
        self.rounds: list = []
        self.finish = "length"
        self.matched: str | int | None = None
        self.done = False
        self.t_started = t_started
        self.t_first: float | None = None
        self.t_prev = t_started  # when the previous step arrived
        self.prefill_ms = 0.0

    def add(self, step, t: float) -> int:
        """Take one decoder step (the prefill's token or a verify round); returns how many of
        its tokens are kept (a stop string can end the output inside a round)."""
        if step.stats is None:
            self.t_first = t
            self.prefill_ms = step.prefill_ms or 0.0
        else:
            self.rounds.append(step.stats)
        tokens, stop_hit = self._detokenize(step.tokens)
        self.out.extend(tokens)
        if stop_hit:
            self.finish, self.matched = "stop", self.detok.matched
        elif step.finish_reason:
            self.finish = step.finish_reason
            if self.finish == "stop" and self.out and self.out[-1] in self.eos_token_ids:
                self.matched = self.out[-1]
        self.done = stop_hit or bool(step.finish_reason)
        return len(tokens)

    def _detokenize(self, tokens: list[int]) -> tuple[list[int], bool]:
        """The tokens to keep, and whether a stop string ended the output among them."""
        if self.detok is None:
            return tokens, False
        for i, tok in enumerate(tokens):
            if tok not in self.eos_ends and self.detok.add(tok):
                return tokens[: i + 1], True
        return tokens, False

    def send_delta(self) -> None:
        """Stream the text that is safe to send now; all of it once the output has ended."""
        if not self.params.stream or self.job.on_delta is None:
            return
        if self.done:
            self.detok.flush()
        self._send(self.detok.take(final=self.done))

    def _send(self, text: str) -> None:
        if text:
            self.job.on_delta(Delta(text, len(self.out), len(self.rounds)))

    def result(self) -> JobResult:
        aborted = self.finish == "abort"
        t_finished = time.perf_counter() if aborted else self.t_prev
        detok = self.detok
        if detok is None:
            detok = IncrementalDetokenizer(
                self.tokenizer, skip_special_tokens=self.params.skip_special_tokens
            )
            for tok in self.out:
                if tok not in self.eos_ends:
                    detok.add(tok)
        detok.flush()
        if self.params.stream and self.job.on_delta is not None and not aborted:
            self._send(detok.take(final=True))
        return JobResult(
            rid=self.job.rid,
            prompt_tokens=len(self.params.prompt_ids),
            output_ids=self.out,
            text=detok.text,
            finish_reason=self.finish,
            matched_stop=self.matched,
            rounds=self.rounds,
            t_received=self.job.t_received,
            t_started=self.t_started,
            t_first_token=self.t_first,
            t_finished=t_finished,
            prefill_ms=self.prefill_ms,
            error=self.job.cancel_reason if aborted else None,
        )
