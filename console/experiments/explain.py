"""Explain run B against run A from the history: the verdict without retyping numbers.

A is the baseline, B the observed. Both are lined up point by point (text type, context)
as `history compare` does. A point both runs measured at the same context and text needs
no model: it goes through the comparison protocol (`pairing.paired_figures`, paired by
passage, the host's measured drift for the order the two were read in, `block_order`, in
the time intervals) and the verdict is the
decomposition (`same_point`: commit moved, step time moved, or within noise). Any other
pair gets `verdict.judge` with both sides' requests, so the observed and baseline figures
carry their own intervals. Where the runs share no point
but each measured one text type, that one pair is explained (context growth, a text
change). The model is fitted from the newest sweep over at least two contexts on A's
host with A's flags (the baseline's engine: the question is whether B behaves as that
engine would), else B's flags; never from a one-context baseline run.
`specconsole history explain` and the TUI's history screen both call `explain_runs`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, replace
from typing import Any

from console.analysis.block_order import measured_order
from console.analysis.intervals import usable
from console.analysis.noise_profile import Drift
from console.analysis.pairing import paired_figures
from console.analysis.records import RequestSample
from console.analysis.same_point import SamePointVerdict, judge_same_point
from console.analysis.verdict import Judgement, Observed, Sweep, judge
from console.errors import ConsoleError
from console.store.runs import RunStore, StoredRun


class ExplainError(ConsoleError):
    """Two runs that cannot be explained one against the other."""


@dataclass(frozen=True)
class RunsExplained:
    """The verdicts on run B against run A, one per point they can be lined up at."""

    a: StoredRun
    b: StoredRun
    model_run: int | None  # the sweep run the model is fitted from; None when none fits
    model_from: str
    pairs: tuple[tuple[str, Judgement | SamePointVerdict], ...]  # (what is compared, verdict)
    drift: Drift = field(default_factory=Drift.none)

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": _header(self.a),
            "b": _header(self.b),
            "model_run": self.model_run,
            "model_from": self.model_from,
            "drift": self.drift.as_dict(),
            "verdicts": [{"point": label, **j.as_dict()} for label, j in self.pairs],
        }

    def lines(self) -> list[str]:
        modelled = any(not isinstance(j, SamePointVerdict) for _, j in self.pairs)
        model = f"model from {self.model_from}" if modelled else (
            "same context and text: no model needed")  # fmt: skip
        out = [
            f"run {self.b.id} ({self.b.info.kind}, flags {self.b.info.flags_hash}) against "
            f"run {self.a.id} ({self.a.info.kind}, flags {self.a.info.flags_hash}); {model}"
        ]
        for label, judged in self.pairs:
            out += ["", f"{label}:", *("  " + line for line in judged.text().splitlines())]
        return out


def _header(run: StoredRun) -> dict[str, Any]:
    return {"id": run.id, "kind": run.info.kind, "method": run.info.method,
            "host": run.info.host, "flags_hash": run.info.flags_hash}  # fmt: skip


async def drift_for_runs(store: RunStore, a: StoredRun, b: StoredRun) -> Drift:
    """The drift term two stored runs carry, for the order their requests were read in
    (`block_order`: side by side when they alternate, else two blocks, A-B): the noise
    profile of A's host with A's flags, else B's, else the host's newest (the source
    says which)."""
    host, order = a.info.host, measured_order(a.requests, b.requests)
    for flags in (a.info.flags_hash, b.info.flags_hash, None):
        profile = await store.noise_profile(host, flags)
        if profile is not None:
            drift = profile.drift(order)
            if flags is None:
                drift = dataclasses.replace(drift, source=drift.source + ", other flags")
            return drift
    return Drift.none(order)


def _points(run: StoredRun) -> dict[tuple[str, int], list[RequestSample]]:
    out: dict[tuple[str, int], list[RequestSample]] = {}
    for s in usable(run.requests):
        out.setdefault((s.text_type, s.context_tokens), []).append(s)
    return out


def pair_points(
    a: StoredRun, b: StoredRun
) -> list[tuple[str, list[RequestSample], list[RequestSample]]]:
    """(label, A's requests, B's requests) per point both measured; else, when each run
    measured one point, that pair."""
    pa, pb = _points(a), _points(b)
    for run, points in ((a, pa), (b, pb)):
        if not points:
            raise ExplainError(
                f"Run {run.id} ({run.info.kind}) has no usable request samples; explain needs "
                "two runs of measured requests (prompt, sweep, baseline, ...)."
            )
    common = sorted(set(pa) & set(pb))
    if common:
        return [(f"{kind} at context {ctx}", pa[(kind, ctx)], pb[(kind, ctx)])
                for kind, ctx in common]  # fmt: skip
    if len(pa) == 1 and len(pb) == 1:
        (ka, ca), (kb, cb) = next(iter(pa)), next(iter(pb))
        label = f"{ka} at context {ca} -> {kb} at context {cb}"
        return [(label, pa[(ka, ca)], pb[(kb, cb)])]
    raise ExplainError(
        f"Runs {a.id} and {b.id} share no (text, context) point and measured several each; "
        "explain two runs of one point each, or two runs of the same points."
    )


async def model_sweep(store: RunStore, a: StoredRun, b: StoredRun) -> StoredRun | None:
    """The newest sweep over two contexts or more on A's host: A's flags first, B's next."""
    for run in (a, b):
        found = await store.latest_sweep(a.info.host, flags_hash=run.info.flags_hash)
        if found is not None:
            return found
    return None


async def explain_runs(
    store: RunStore, a: StoredRun, b: StoredRun, *, seed: int = 0
) -> RunsExplained:
    """The verdict on run B against run A, per point: the decomposition where both
    measured the same context and text, else the model's verdict."""
    pairs = pair_points(a, b)
    drift = await drift_for_runs(store, a, b)
    model = await model_sweep(store, a, b)
    samples = model.requests if model is not None else ()
    sweep = Sweep(tuple(samples), a.info.host)
    source = (
        f"sweep run {model.id} (flags {model.info.flags_hash})"
        if model is not None
        else "no stored sweep over two contexts for these flags"
    )
    judged: list[tuple[str, Judgement | SamePointVerdict]] = []
    for label, ra, rb in pairs:
        same = _same_point(ra, rb)
        paired = paired_figures(ra, rb, drift=drift, rows=len(pairs)) if same else None
        if paired is not None:
            judged.append((label, judge_same_point(paired, label)))
            continue
        # Two blocks at two times: each side draws its share of the host's drift (their
        # ratio then carries the drift a shift between two blocks has); side by side, the
        # share of the two processes' offset.
        share = drift.shift_sd / math.sqrt(2)
        observed = replace(Observed.from_requests(rb, source=f"run {b.id}"), drift_sd=share)
        base = replace(Observed.from_requests(ra, source=f"run {a.id}"), drift_sd=share)
        judged.append((label, judge(sweep, observed, base, seed=seed)))
    return RunsExplained(
        a, b, model.id if model is not None else None, source, tuple(judged), drift
    )


def _same_point(a: list[RequestSample], b: list[RequestSample]) -> bool:
    """Both sides at one context and one text type, the same on both."""
    points = {(s.text_type, s.context_tokens) for s in (*a, *b)}
    return len(points) == 1
