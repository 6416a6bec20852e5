"""A request as the engine thread sees it: its parameters, its result, and its decoding
state while it runs (the tokens kept, their text cut at a stop string, the deltas sent).
The serial loop (engine/serve/worker.py) and the batched one (engine/serve/scheduler.py)
share them."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.sampling import GREEDY, SamplingSettings
from engine.serve.detokenizer import IncrementalDetokenizer

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


class Decoding:
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
