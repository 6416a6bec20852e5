"""The batched engine loop: continuous batching of up to --max-running-requests jobs.

Between rounds, queued jobs join the running batch while it has room (each one's prefill
runs alone and gives its first token), and cancelled or finished jobs leave it; a round
then decodes every running job together (engine/batch.py: one drafter forward, one
target forward). Jobs past the limit wait in the worker's queue, FIFO, which /metrics
reports as `sglang:num_queue_reqs` beside `sglang:num_running_reqs`.

Everything here runs on the worker's engine thread, the only owner of the model.
"""

from __future__ import annotations

import logging
import time

from engine.batch import BatchDecoder
from engine.serve.jobs import Decoding, Job, JobResult

logger = logging.getLogger("specengine.server")


class BatchScheduler:
    def __init__(self, worker, batch: BatchDecoder, max_running: int):
        self.worker = worker
        self.batch = batch
        self.max_running = max_running
        self.active: dict[str, Decoding] = {}  # by job id, in arrival order

    def run(self) -> None:
        while True:
            joining = self._take_queued()
            if joining is None:
                return
            for job in joining:
                self._start(job)
            for rid in [r for r, d in self.active.items() if d.job.cancelled.is_set()]:
                self.active[rid].finish = "abort"
                self._end(rid)
            if self.active:
                try:
                    self._round()
                except Exception as e:  # a bug in the engine: fail the batch, keep serving
                    logger.exception("engine error in a batch of %d", len(self.active))
                    for rid in list(self.active):
                        self._fail(rid, f"{type(e).__name__}: {e}")

    def _take_queued(self) -> list[Job] | None:
        """Jobs to start now (waiting while there is nothing to do); None: stop the loop."""
        w = self.worker
        with w._cond:
            while not w._queue and not self.active and not w._stopping:
                w._cond.wait()
            if w._stopping and not w._queue and not self.active:
                return None
            joining = []
            while w._queue and len(self.active) + len(joining) < self.max_running:
                joining.append(w._queue.popleft())
            w.metrics.num_queue_reqs.set(len(w._queue))
            return joining

    def _start(self, job: Job) -> None:
        """Prefill a job into the batch and deliver its first token (or its whole end)."""
        w, p = self.worker, job.params
        t_started = time.perf_counter()
        if job.cancelled.is_set():
            w._conclude(job, JobResult.aborted(job, job.cancel_reason, t_started=t_started))
            return
        decoding = Decoding(job, w.tokenizer, w.eos_token_ids, t_started)
        try:
            step = self.batch.join(
                job.rid,
                p.prompt_ids,
                max_new_tokens=p.max_new_tokens,
                eos_token_ids=w.eos_token_ids,
                ignore_eos=p.ignore_eos,
                sampling=p.sampling,
            )
        except ValueError as e:  # the engine refused the request itself
            w._conclude(job, JobResult.refused(job, str(e), t_started=t_started))
            return
        except Exception as e:  # a bug in the engine: report it, keep serving
            logger.exception("engine error on request %s", job.rid)
            w._conclude(
                job, JobResult.aborted(job, f"{type(e).__name__}: {e}", t_started=t_started)
            )
            return
        self.active[job.rid] = decoding
        self._gauge_running()
        t = time.perf_counter()
        decoding.add(step, t)
        decoding.t_prev = t
        decoding.send_delta()
        if decoding.done:
            self._end(job.rid)

    def _round(self) -> None:
        """One batch round; its metrics once (the `Decode batch` line at an interval)."""
        w = self.worker
        t_round = time.perf_counter()
        steps = self.batch.step()
        w._inject(time.perf_counter() - t_round)  # inside the round's wall time
        t = time.perf_counter()
        commits, emitted, counted = [], 0, False
        for rid, step in steps.items():
            decoding = self.active[rid]
            kept = decoding.add(step, t)
            decoding.t_prev = t
            if decoding.job.count_in_metrics:
                commits.append(step.stats.commit_len)
                emitted += kept
                counted = True
            decoding.send_delta()
        # the round's batch, those that finished in it included (the serial loop's count)
        tokens = sum(len(d.params.prompt_ids) + len(d.out) for d in map(self.active.get, steps))
        # The round's counters go in before any finished request is concluded: a client that
        # hears of its end and scrapes /metrics then finds its rounds counted, and the
        # gauges emptied by `_end` are not set again from this round's batch.
        if counted:
            line = w.counters.on_batch_round(
                commit_lens=commits,
                emitted=emitted,
                seconds=t - t_round,
                num_tokens=tokens,
                running=len(steps),  # the batch this round ran, as SGLang reports it
                queue=len(w._queue),
            )
            if line is not None:
                logger.info(line.format())
        for rid in [r for r in steps if self.active[r].done]:
            self._end(rid)

    def _end(self, rid: str) -> None:
        """A job leaves the batch (finished, stopped by a stop string, or cancelled)."""
        decoding = self.active.pop(rid)
        self.batch.leave(rid)
        self._gauge_running()  # before the client hears of its end, so /metrics agrees
        self.worker._conclude(decoding.job, decoding.result())

    def _fail(self, rid: str, error: str) -> None:
        decoding = self.active.pop(rid)
        self.batch.leave(rid)
        self._gauge_running()
        job = decoding.job
        result = JobResult.aborted(job, error, t_started=decoding.t_started)
        self.worker._conclude(job, result)

    def _gauge_running(self) -> None:
        m = self.worker.metrics
        m.num_running_reqs.set(len(self.active))
        # what the batch's KV caches hold once this job joined or left
        tokens = sum(len(d.params.prompt_ids) + len(d.out) for d in self.active.values())
        m.num_used_tokens.set(tokens)
        m.token_usage.set(tokens / self.worker.counters.capacity)

    def cancel_all(self, reason: str) -> None:
        """Flag every running job; the loop ends them before its next round."""
        for decoding in list(self.active.values()):
            decoding.job.cancel(reason)
