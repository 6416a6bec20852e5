"""tok/s = commit length / step time, fitted from a sweep: the fixed effects of the model.

At concurrency 1 a speculative engine commits `commit` tokens per verify round and a
round takes `step` seconds, so decode tok/s = commit / step. The two factors move for
different reasons: step time grows with context (attention reads the whole KV cache each
round), commit length depends on the text and the drafter. A sweep measures both; this
module fits

    step(ctx)         linear in the decode context (prompt + half the output), the first
                      model that fits attention-bound decode; it says when it fits badly
    commit(type, ctx) per text type, interpolated between the swept contexts (a drafter
                      trained on short sequences loses acceptance as context grows;
                      a constant would hide that, a line would invent a shape)

and predicts tok/s for any (context, text type). The verdict (`verdict.judge`) splits a
change through these predictions into a context factor, a text factor and a residual,
each with its interval from the whole model (docs/model.md).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from console.analysis.records import RequestSample
from console.analysis.thresholds import BAD_FIT
from console.errors import ConsoleError


class FitError(ConsoleError):
    """A sweep too thin to fit (too few points or contexts)."""


@dataclass(frozen=True)
class Line:
    """y = intercept + slope * x, with how well it fits."""

    intercept: float
    slope: float
    n: int
    r2: float | None  # None when every x is equal (a constant)
    max_rel_residual: float

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    def as_dict(self) -> dict[str, Any]:
        return {
            "intercept": self.intercept,
            "slope": self.slope,
            "n": self.n,
            "r2": self.r2,
            "max_rel_residual": self.max_rel_residual,
        }


def fit_line(points: list[tuple[float, float]]) -> Line:
    """Least squares; a constant (the mean) when the x values do not vary."""
    n = len(points)
    if n == 0:
        raise FitError("There are no points to fit.")
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        intercept, slope, r2 = my, 0.0, None
    else:
        slope = sum((x - mx) * (y - my) for x, y in points) / sxx
        intercept = my - slope * mx
        ss_tot = sum((y - my) ** 2 for _, y in points)
        ss_res = sum((y - (intercept + slope * x)) ** 2 for x, y in points)
        r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    rel = [abs(y - (intercept + slope * x)) / abs(y) for x, y in points if y]
    return Line(intercept, slope, n, r2, max(rel) if rel else 0.0)


@dataclass(frozen=True)
class Curve:
    """Piecewise-linear through measured (x, median y) points, flat beyond the ends.

    Commit length against context has no physical line to fit: a drafter keeps its
    acceptance until its training length and then loses it. Interpolating between the
    measured points is honest about that; beyond the sweep it holds the last value."""

    points: tuple[tuple[float, float], ...]

    def at(self, x: float) -> float:
        pts = self.points
        if x <= pts[0][0]:
            return pts[0][1]
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if x <= x1:
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        return pts[-1][1]

    def as_dict(self) -> dict[str, Any]:
        return {"points": [list(p) for p in self.points]}


def _medians(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    by_x: dict[float, list[float]] = {}
    for x, y in points:
        by_x.setdefault(x, []).append(y)
    return sorted((x, statistics.median(ys)) for x, ys in by_x.items())


@dataclass(frozen=True)
class ThroughputModel:
    """The fitted step-time line and per-text-type commit lines of one engine config."""

    step: Line  # all text types pooled: what the operator reads as "step time vs context"
    commit: dict[str, Curve]
    contexts: tuple[float, float]  # the decode contexts the sweep covered (min, max)
    # per text type where the sweep has two contexts of it: a round that commits more
    # tokens can cost more (cache writes, drafting over them), so step time is not always
    # the text's business alone; predictions use these, the pooled line is the fallback
    step_by_type: dict[str, Line] = field(default_factory=dict)
    flags_hash: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def step_fits(self) -> bool:
        return self.step.max_rel_residual <= BAD_FIT

    def step_at(self, context: float, text_type: str | None = None) -> float:
        line = self.step_by_type.get(text_type or "", self.step)
        # A line fitted on noisy points can dip below zero far outside the sweep; never
        # predict less than half the line's own intercept.
        return max(line.at(context), line.intercept * 0.5, 1e-6)

    def commit_at(self, text_type: str, context: float) -> float:
        line = self.commit.get(text_type)
        if line is None:
            raise FitError(
                f"The sweep measured no {text_type!r} text (it has "
                f"{', '.join(sorted(self.commit))}); sweep that type first."
            )
        return max(1.0, line.at(context))

    def describe(self) -> list[str]:
        """The fitted model in words, a line each: the step line, commit per text, notes
        (what `specconsole sweep` prints and the TUI's verdict panel shows)."""
        s = self.step
        if s.n <= 2:  # a line through two points is off neither: no claim either way
            fit_words = (f"{s.n} contexts: a line through them cannot be off them, so this "
                         "says nothing about linearity; sweep a third to check it")  # fmt: skip
        else:
            fit_words = (f"{'fits' if self.step_fits else 'fits badly'}: worst of {s.n} "
                         f"points {s.max_rel_residual:.0%} off the line")  # fmt: skip
        lines = [
            f"step time = {s.intercept * 1000:.2f} ms + {s.slope * 1e6:.3f} ms per 1k tokens of "
            f"mid-decode context ({fit_words})"
        ]
        for kind, curve in self.commit.items():
            pts = ", ".join(f"{y:.2f} at {x:.0f}" for x, y in curve.points)
            lines.append(f"commit on {kind}: {pts}")
        return lines + [f"note: {note}" for note in self.notes]

    def predict(self, context: float, text_type: str) -> float:
        """Decode tok/s for a context and text type: commit / step."""
        return self.commit_at(text_type, context) / self.step_at(context, text_type)

    def as_dict(self) -> dict[str, Any]:
        return {
            "step_time_s": self.step.as_dict(),
            "step_fits": self.step_fits,
            "commit_len": {k: v.as_dict() for k, v in self.commit.items()},
            "step_time_s_by_type": {k: v.as_dict() for k, v in self.step_by_type.items()},
            "contexts": list(self.contexts),
            "flags_hash": self.flags_hash,
            "notes": list(self.notes),
        }


def _pooled(
    samples: list[RequestSample], x: Callable[[RequestSample], float]
) -> dict[tuple[str, float], tuple[float, float, float]]:
    """Per (text type, context): (context, commit, step) pooled over the repeats.

    Pooled, not medians: commit = all decode tokens / all verify steps and step = all
    decode time / all verify steps, so commit / step is exactly the point's decode rate
    (total tokens over total time). A median commit over a median step is not: when a
    round that commits more also takes longer, the ratio of medians drifts from both."""
    groups: dict[tuple[str, float], list[RequestSample]] = {}
    for s in samples:
        groups.setdefault((s.text_type, x(s)), []).append(s)
    out = {}
    for key, group in groups.items():
        steps = sum(s.verify_steps or 0 for s in group)
        tokens = sum(s.completion_tokens - 1 for s in group)
        seconds = sum(s.decode_time_s or 0.0 for s in group)
        out[key] = (key[1], tokens / steps, seconds / steps)
    return out


def pooled_tok_s(samples: Iterable[RequestSample]) -> float | None:
    """All decode tokens over all decode time of the unflagged samples: what the model's
    commit / step predicts for a point."""
    ok = [s for s in samples if s.ok and s.decode_time_s]
    seconds = sum(s.decode_time_s or 0.0 for s in ok)
    return sum(s.completion_tokens - 1 for s in ok) / seconds if seconds else None


def fit(samples: Iterable[RequestSample]) -> ThroughputModel:
    """Fit the model from the unflagged samples of one engine config (one flags hash)."""
    ok = [
        s
        for s in samples
        if s.ok
        and s.step_time_s
        and s.commit_len
        and s.verify_steps
        and s.decode_context is not None
    ]
    if len(ok) < 2:
        raise FitError(
            "The sweep has fewer than two usable requests (unflagged, with verify steps "
            "and a decode time); run a context sweep first."
        )

    # Points are grouped by prompt length (the sweep's x); the decode context is that plus
    # half the output, the same for every repeat of a point.
    def x(s: RequestSample) -> float:
        return float(round(s.decode_context or 0))

    contexts = sorted({x(s) for s in ok})
    if len(contexts) < 2:
        raise FitError("The sweep has one context only; step time needs at least two.")
    hashes = {s.flags_hash for s in ok}
    notes: list[str] = []
    if len(hashes) > 1:
        notes.append(f"samples from {len(hashes)} flag sets were fitted together")
    # The pooled step line: per-context medians of the per-type pooled figures, so one
    # text type with many points does not outweigh another.
    step = fit_line(_medians([(ctx, st) for ctx, _c, st in _pooled(ok, x).values()]))
    if step.max_rel_residual > BAD_FIT:
        notes.append(
            f"step time is not linear in context here (a point is {step.max_rel_residual:.0%} "
            "off the line): predictions are rough"
        )
    commit: dict[str, Curve] = {}
    step_by_type: dict[str, Line] = {}
    for kind in sorted({s.text_type for s in ok}):
        points = sorted(_pooled([s for s in ok if s.text_type == kind], x).values())
        commit[kind] = Curve(tuple((ctx, c) for ctx, c, _st in points))
        if len(points) >= 2:
            step_by_type[kind] = fit_line([(ctx, st) for ctx, _c, st in points])
    return ThroughputModel(
        step=step,
        commit=commit,
        step_by_type=step_by_type,
        contexts=(float(contexts[0]), float(contexts[-1])),
        flags_hash=next(iter(hashes)) if len(hashes) == 1 else "",
        notes=tuple(notes),
    )
