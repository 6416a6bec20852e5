"""The break-even table's arithmetic: per context, both arms' step times, the commit
needed to break even and the commit measured, the speedup, each with its interval, and
whether speculation pays ("yes" / "no" / "not sure", from the speedup's interval).

Pure (no engine): `experiments/breakeven.py` measures the arms and calls it, and the
history and the sweeps view recompute a stored run's rows from its samples with it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from console.analysis.intervals import LEVEL, RESAMPLES, Interval, bootstrap_many
from console.analysis.records import RequestSample
from console.analysis.round_curve import LOOP_SHARE
from console.errors import ConsoleError


class BreakevenError(ConsoleError):
    """A context whose arm has no usable request."""


@dataclass(frozen=True)
class Pooled:
    """One context's figures pooled over a set of requests of each arm."""

    ar_step_s: float  # AR decode time / AR decode tokens: one token a step
    spec_step_s: float  # spec decode time / verify steps
    commit: float  # spec decode tokens / verify steps
    ar_tok_s: float
    spec_tok_s: float

    @property
    def needed(self) -> float:
        return self.spec_step_s / self.ar_step_s

    @property
    def speedup(self) -> float:
        return self.commit / self.needed


def _usable(samples: Sequence[RequestSample], *, steps: bool) -> list[RequestSample]:
    return [
        s
        for s in samples
        if s.ok and s.decode_time_s and s.completion_tokens > 1 and (not steps or s.verify_steps)
    ]


def pool(spec: Sequence[RequestSample], ar: Sequence[RequestSample]) -> Pooled:
    """Sum of tokens / sum of steps / sum of decode time over each arm's requests."""
    ar_tokens = sum(s.completion_tokens - 1 for s in ar)
    ar_time = sum(s.decode_time_s or 0.0 for s in ar)
    spec_tokens = sum(s.completion_tokens - 1 for s in spec)
    spec_time = sum(s.decode_time_s or 0.0 for s in spec)
    spec_steps = sum(s.verify_steps or 0 for s in spec)
    return Pooled(
        ar_step_s=ar_time / ar_tokens,
        spec_step_s=spec_time / spec_steps,
        commit=spec_tokens / spec_steps,
        ar_tok_s=ar_tokens / ar_time,
        spec_tok_s=spec_tokens / spec_time,
    )


@dataclass(frozen=True)
class BreakevenRow:
    """One context: both arms' step times, the commit needed and measured, the speedup."""

    context: int
    ar_step_s: Interval
    spec_step_s: Interval
    needed_commit: Interval  # spec step / AR step
    measured_commit: Interval
    speedup: Interval  # measured / needed = spec tok/s / AR tok/s
    ar_tok_s: float
    spec_tok_s: float
    ar_requests: int
    spec_requests: int
    # mean share of the speculative outputs' 8-grams seen earlier in them: a looping output
    # is easy to draft, so a high share means the measured commit is inflated by it
    repeated: float | None = None

    @property
    def looping(self) -> bool:
        return self.repeated is not None and self.repeated >= LOOP_SHARE

    @property
    def pays(self) -> bool | None:
        """True only when the speedup's interval lies above 1, False when it lies below,
        None ("not sure") when it holds 1: a speedup of 1.08 [0.72–2.56] is no answer.
        Truthy only for a sure yes, so `if row.pays` reads the way it sounds. One request
        an arm has no spread to resample (a zero-width interval): not sure either."""
        if self.speedup.low == self.speedup.high:
            return None
        if self.speedup.low > 1.0:
            return True
        if self.speedup.high < 1.0:
            return False
        return None

    @property
    def pays_text(self) -> str:
        """ "yes", "no" or "not sure", as the table and the TUI print it."""
        return {True: "yes", False: "no", None: "not sure"}[self.pays]

    def as_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "ar_step_ms": _ms(self.ar_step_s),
            "spec_step_ms": _ms(self.spec_step_s),
            "needed_commit": self.needed_commit.as_dict(),
            "measured_commit": self.measured_commit.as_dict(),
            "speedup": self.speedup.as_dict(),
            "ar_tok_s": self.ar_tok_s,
            "spec_tok_s": self.spec_tok_s,
            "ar_requests": self.ar_requests,
            "spec_requests": self.spec_requests,
            "repeated": self.repeated,
            "looping": self.looping,
            "pays": self.pays,
            "pays_text": self.pays_text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BreakevenRow:
        def iv(key: str, scale: float = 1.0) -> Interval:
            d = data[key]
            return Interval(d["value"] * scale, d["low"] * scale, d["high"] * scale)

        return cls(
            context=int(data["context"]),
            ar_step_s=iv("ar_step_ms", 1e-3),
            spec_step_s=iv("spec_step_ms", 1e-3),
            needed_commit=iv("needed_commit"),
            measured_commit=iv("measured_commit"),
            speedup=iv("speedup"),
            ar_tok_s=float(data["ar_tok_s"]),
            spec_tok_s=float(data["spec_tok_s"]),
            ar_requests=int(data["ar_requests"]),
            spec_requests=int(data["spec_requests"]),
            repeated=data.get("repeated"),
        )


def _ms(interval: Interval) -> dict[str, float]:
    # Stored in milliseconds, as the table prints them.
    return {k: v * 1000.0 for k, v in interval.as_dict().items()}


def breakeven_row(
    context: int,
    spec: Sequence[RequestSample],
    ar: Sequence[RequestSample],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    rng: random.Random | None = None,
) -> BreakevenRow:
    """One context's row: pooled figures and percentile bootstrap intervals, resampling
    each arm's requests with replacement (the arms independently: they are separate
    engine runs)."""
    spec_ok, ar_ok = _usable(spec, steps=True), _usable(ar, steps=False)
    if not spec_ok or not ar_ok:
        missing = "speculative" if not spec_ok else "non-speculative"
        raise BreakevenError(
            f"No usable {missing} request at context {context} (each was flagged or the "
            "engine reported no decode time or verify steps); see the stored samples."
        )
    point = pool(spec_ok, ar_ok)
    # One seed per row from the caller's generator: a stored run's rows reproduce.
    seed = (rng or random.Random(0)).randrange(2**32)
    picks: list[Callable[[Pooled], float]] = [
        lambda p: p.ar_step_s, lambda p: p.spec_step_s, lambda p: p.needed,
        lambda p: p.commit, lambda p: p.speedup,
    ]  # fmt: skip
    ar_step, spec_step, needed, commit, speedup = bootstrap_many(
        [spec_ok, ar_ok], [(lambda s, a, f=f: f(pool(s, a))) for f in picks],
        resamples=resamples, level=level, seed=seed,
    )  # fmt: skip
    return BreakevenRow(
        context=context,
        ar_step_s=ar_step,
        spec_step_s=spec_step,
        needed_commit=needed,
        measured_commit=commit,
        speedup=speedup,
        ar_tok_s=point.ar_tok_s,
        spec_tok_s=point.spec_tok_s,
        ar_requests=len(ar_ok),
        spec_requests=len(spec_ok),
        repeated=_mean([s.repetition for s in spec_ok if s.repetition is not None]),
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def breakeven_rows(
    samples: Sequence[RequestSample],
    *,
    spec_hash: str,
    ar_hash: str,
    seed: int = 0,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> list[BreakevenRow]:
    """The table from a run's samples; the arms are told apart by their flags hash, so a
    stored breakeven run can be recomputed from its samples alone."""
    rng = random.Random(seed)
    contexts = sorted({s.context_tokens for s in samples})
    rows = []
    for context in contexts:
        at = [s for s in samples if s.context_tokens == context]
        spec = [s for s in at if s.flags_hash == spec_hash]
        ar = [s for s in at if s.flags_hash == ar_hash]
        rows.append(breakeven_row(context, spec, ar, resamples=resamples, level=level, rng=rng))
    return rows


def stored_rows(summary: dict[str, Any] | None) -> list[BreakevenRow]:
    """The rows of a stored breakeven run (`StoredRun.summary`), for the history and the
    sweeps view; empty for a run that did not finish."""
    return [BreakevenRow.from_dict(r) for r in (summary or {}).get("rows", [])]


def pays_summary(rows: Sequence[BreakevenRow]) -> str:
    """Where speculation surely pays, in a few words (the TUI's one-line summary)."""
    paying = [r.context for r in rows if r.pays]
    unsure = [r.context for r in rows if r.pays is None]
    if paying:
        text = f"pays up to ctx {max(paying)}"
    elif unsure:
        text = "not sure at any context"
    else:
        text = "does not pay at any context"
    if unsure and paying:
        text += f" (not sure at ctx {', '.join(map(str, unsure))})"
    return text


def table_lines(rows: Sequence[BreakevenRow]) -> list[str]:
    """The table as aligned text (the CLI prints it; the sweeps view can show it)."""
    lines = [
        f"{'context':>7}  {'AR step ms':<21}{'spec step ms':<21}{'commit needed':<19}"
        f"{'commit measured':<19}{'speedup':<19}{'pays':<10}repeats"
    ]
    for r in rows:
        lines.append(
            f"{r.context:>7}  {r.ar_step_s.text('{:.2f}', 1000):<21}"
            f"{r.spec_step_s.text('{:.2f}', 1000):<21}{r.needed_commit.text():<19}"
            f"{r.measured_commit.text():<19}{r.speedup.text():<19}"
            f"{r.pays_text:<10}{'-' if r.repeated is None else f'{r.repeated:.0%}'}"
            f"{' (loop)' if r.looping else ''}"
        )
    if any(r.pays is None for r in rows):
        lines.append(
            "  not sure: the speedup's interval holds 1 (no change), or one request an arm "
            "gives it none, so it may pay or not; more requests per point (repeat, --repeat) "
            "narrow it"
        )
    if any(r.looping for r in rows):
        lines.append(
            "  (loop): most of the speculative output repeats itself, which a drafter predicts "
            "easily; the measured commit there is inflated, not earned"
        )
    return lines
