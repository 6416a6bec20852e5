"""The engine loop: one thread owns the model and serves the requests.

Why one thread and FIFO: torch work must never run on the asyncio event loop, and a
single owner needs no locks around the model or its caches. With --max-running-requests
above 1 the loop batches (engine/serve/scheduler.py: up to that many requests decoded
together, one target forward a round, joining and leaving between rounds); at 1, or with
a decoder that cannot batch, it serves one request at a time through `Decoder.stream`.
Waiting requests sit in a deque that /metrics reports as `sglang:num_queue_reqs`. A
request is cancelled (client gone, server shutting down) by setting its flag; the loop
checks it between verify rounds and drops the request's caches.

Results and streamed deltas go back through callbacks that the HTTP side binds to its
event loop with `call_soon_threadsafe`.
"""

from __future__ import annotations

import collections
import logging
import threading
import time

from engine.batch import BatchDecoder
from engine.decode import Decoder
from engine.serve.jobs import Decoding, Delta, GenParams, Job, JobResult
from engine.serve.metrics import DecodeCounters, ServerMetrics
from engine.serve.scheduler import BatchScheduler

__all__ = ["Delta", "EngineWorker", "GenParams", "Job", "JobResult", "ShuttingDown"]

logger = logging.getLogger("specengine.server")


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
        max_running: int = 1,
    ):
        self.decoder = decoder
        # Batching needs the real Decoder's models; a test's or a bench's replay decoder
        # (only `stream`) is served one request at a time.
        self.scheduler: BatchScheduler | None = None
        if max_running > 1 and isinstance(decoder, Decoder):
            self.scheduler = BatchScheduler(self, BatchDecoder(decoder), max_running)
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
        if self.scheduler is not None:
            return len(self.scheduler.active)
        return 1 if self.current is not None else 0

    def kv_cache_info(self) -> dict[str, int]:
        if self.scheduler is not None:
            return self.scheduler.batch.kv_cache_info()
        return self.decoder.kv_cache_info()

    def shutdown(self, *, abort: bool = True) -> None:
        """Stop taking requests; abort the running one between rounds and every queued one."""
        with self._cond:
            self._stopping = True
            pending = list(self._queue)
            self._queue.clear()
            self.metrics.num_queue_reqs.set(0)
            if abort and self.current is not None:
                self.current.cancel("the server is shutting down")
            if abort and self.scheduler is not None:
                self.scheduler.cancel_all("the server is shutting down")
            self._cond.notify_all()
        for job in pending:
            job.cancel("the server is shutting down")
            self._finish_unstarted(job, "the server is shutting down")

    def join(self, timeout: float | None = None) -> None:
        if self.thread.is_alive():
            self.thread.join(timeout)

    # -- engine thread ---------------------------------------------------------------
    def _loop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.run()
            return
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
            self._conclude(job, result)

    def _run(self, job: Job) -> JobResult:
        """Decode one job to its end: a stop, the length limit, or a cancel between rounds."""
        p = job.params
        t_started = time.perf_counter()
        if job.cancelled.is_set():
            return JobResult.aborted(job, job.cancel_reason, t_started=t_started)
        decoding = Decoding(job, self.tokenizer, self.eos_token_ids, t_started)
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

    def _count_round(self, decoding: Decoding, commit_len: int, emitted: int, seconds: float):
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
        self._conclude(job, JobResult.aborted(job, reason, t_started=time.perf_counter()))

    def _conclude(self, job: Job, result: JobResult) -> None:
        """Count a job's end in the metrics and hand its result back."""
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
