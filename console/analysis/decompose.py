"""tok/s = commit length / step time, fitted from a sweep and used to explain a figure.

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

and predicts tok/s for any (context, text type). `explain` then takes an observed figure
(and optionally a baseline) and splits the change into a context factor, a text factor
and a residual, with the arithmetic written out the way an operator checks it by hand:
a residual that neither factor explains is what is worth a bug hunt.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from console.analysis.records import RequestSample
from console.errors import ConsoleError

BAD_FIT = 0.15  # a point more than 15% off the line means the linear model fits badly
MOVED = 0.10  # a factor that changes tok/s by more than 10% "moved"
UNEXPLAINED = 0.20  # a residual over 20% is not explained by context or text


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


# -- verdict ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Factor:
    name: str  # "context" | "text" | "residual"
    ratio: float  # its multiplier on tok/s
    detail: str

    @property
    def moved(self) -> bool:
        limit = UNEXPLAINED if self.name == "residual" else MOVED
        return abs(math.log(self.ratio)) > math.log(1 + limit) if self.ratio > 0 else True


@dataclass(frozen=True)
class Verdict:
    headline: str
    cause: str  # "context" | "text" | "context+text" | "unexplained" | "expected"
    observed: float
    predicted: float
    factors: tuple[Factor, ...]
    lines: tuple[str, ...]  # the arithmetic, one step a line

    def as_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "cause": self.cause,
            "observed_tok_s": self.observed,
            "predicted_tok_s": self.predicted,
            "factors": [
                {"name": f.name, "ratio": f.ratio, "moved": f.moved, "detail": f.detail}
                for f in self.factors
            ],
            "arithmetic": list(self.lines),
        }

    def text(self) -> str:
        return "\n".join([self.headline, *(f"  {line}" for line in self.lines)])


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms"


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f}%"


def explain(
    model: ThroughputModel,
    *,
    observed: float,
    context: float,
    text_type: str,
    baseline: float | None = None,
    baseline_context: float | None = None,
    baseline_text: str | None = None,
    observed_commit: float | None = None,
    observed_step: float | None = None,
) -> Verdict:
    """Explain `observed` tok/s at (context, text type) against the fitted model.

    With a baseline (tok/s at `baseline_context` on `baseline_text`, default the smallest
    swept context and the same text), the change observed/baseline is split through the
    model's own predictions: a context factor (the baseline's text moved from its context
    to this one: step time, and the drafter's acceptance as context grows), a text factor
    (this text against the baseline's at this context: commit length, and what it does to
    the round), and a residual neither explains. Without one, the model's prediction at
    the observed point is the reference. Observed commit and step (from the live series)
    say which factor a residual sits in.
    """
    if observed <= 0:
        raise FitError(f"The observed throughput must be positive, not {observed:g}.")
    step = model.step_at(context, text_type)
    commit = model.commit_at(text_type, context)
    predicted = commit / step
    lines = [
        f"model at context {context:.0f}, {text_type}: commit {commit:.2f} / step {_ms(step)} "
        f"= {predicted:.1f} tok/s"
    ]
    if baseline is not None:
        b_ctx = model.contexts[0] if baseline_context is None else baseline_context
        factors = _against_baseline(
            model, lines, observed, context, text_type, baseline, b_ctx, baseline_text or text_type
        )
    else:
        factors = _against_model(model, lines, observed, context, text_type)
    if observed_commit is not None and observed_step is not None:
        lines.append(
            f"measured: commit {observed_commit:.2f} ({_pct(observed_commit / commit)} vs model), "
            f"step {_ms(observed_step)} ({_pct(observed_step / step)} vs model)"
        )
    if not model.step_fits:
        lines.append(
            "caution: " + model.notes[0] if model.notes else "caution: the step fit is rough"
        )
    return Verdict(
        headline=_headline(factors, observed, baseline),
        cause=_cause(factors),
        observed=observed,
        predicted=predicted,
        factors=tuple(factors),
        lines=tuple(lines),
    )


def _against_baseline(
    model: ThroughputModel,
    lines: list[str],
    observed: float,
    context: float,
    text_type: str,
    baseline: float,
    b_ctx: float,
    b_text: str,
) -> list[Factor]:
    """Split observed / baseline through the model: the context factor, the text factor
    and a residual; the arithmetic goes to `lines`."""
    predicted = model.predict(context, text_type)
    step, commit = model.step_at(context, text_type), model.commit_at(text_type, context)
    b_step, b_commit = model.step_at(b_ctx, b_text), model.commit_at(b_text, b_ctx)
    m_step, m_commit = model.step_at(context, b_text), model.commit_at(b_text, context)
    ctx_factor = (m_commit / m_step) / (b_commit / b_step)
    text_factor = predicted / (m_commit / m_step)
    expected = baseline * ctx_factor * text_factor
    residual = observed / expected
    factors = [
        Factor("context", ctx_factor, f"{b_text} at context {b_ctx:.0f} -> {context:.0f}: "
               f"step {_ms(b_step)} -> {_ms(m_step)}, commit {b_commit:.2f} -> {m_commit:.2f}"),
        Factor("text", text_factor, f"{b_text} -> {text_type} at context {context:.0f}: "
               f"commit {m_commit:.2f} -> {commit:.2f}, step {_ms(m_step)} -> {_ms(step)}"),
        Factor("residual", residual,
               f"observed {observed:.1f} vs expected {expected:.1f} tok/s"),
    ]  # fmt: skip
    lines += [
        f"context: {factors[0].detail}: tok/s x{ctx_factor:.2f}",
        f"text: {factors[1].detail}: tok/s x{text_factor:.2f}",
        f"expected: baseline {baseline:.1f} x {ctx_factor:.2f} x {text_factor:.2f} = "
        f"{expected:.1f} tok/s; observed {observed:.1f} ({_pct(residual)})",
    ]
    return factors


def _against_model(
    model: ThroughputModel, lines: list[str], observed: float, context: float, text_type: str
) -> list[Factor]:
    """No baseline: the model's prediction is the reference, and the best point the sweep
    saw gives the scale for the context and text factors."""
    predicted = model.predict(context, text_type)
    residual = observed / predicted
    lines.append(f"observed {observed:.1f} tok/s: {_pct(residual)} against the model")
    lo_ctx = model.contexts[0]
    best = max(model.commit, key=lambda k: model.predict(lo_ctx, k))
    top = model.predict(lo_ctx, best)
    lines.append(
        f"for scale: the best the sweep saw is {top:.1f} tok/s ({best} text, context "
        f"{lo_ctx:.0f}: commit {model.commit_at(best, lo_ctx):.2f} / step "
        f"{_ms(model.step_at(lo_ctx, best))})"
    )
    at_ctx = model.predict(context, best)
    return [
        Factor("context", at_ctx / top, f"{best} at context {lo_ctx:.0f} -> {context:.0f}"),
        Factor("text", predicted / at_ctx, f"{best} -> {text_type}"),
        Factor("residual", residual, f"observed {observed:.1f} vs model {predicted:.1f}"),
    ]


def _cause(factors: list[Factor]) -> str:
    by = {f.name: f for f in factors}
    if by["residual"].moved:
        return "unexplained"
    moved = [name for name in ("context", "text") if name in by and by[name].moved]
    return "+".join(moved) if moved else "expected"


def _headline(factors: list[Factor], observed: float, baseline: float | None) -> str:
    by = {f.name: f for f in factors}
    residual = by["residual"]
    change = f"{baseline:.1f} -> {observed:.1f} tok/s" if baseline else f"{observed:.1f} tok/s"
    if residual.moved:
        return (
            f"Not physics: {change} is {_pct(residual.ratio)} off what context and text explain; "
            "worth a bug hunt (a flag, the drafter, the host, the measurement)."
        )
    moved = [f for f in factors if f.name != "residual" and f.moved]
    if not moved:
        return f"Expected: {change} matches the model within {abs(residual.ratio - 1):.0%}."
    # name the bigger factor first
    moved.sort(key=lambda f: -abs(math.log(f.ratio)))
    words = {
        "context": "context growth (step time rises with the KV cache)",
        "text": "text-dependent acceptance (the drafter commits a different number of tokens "
        "on this text)",
    }
    parts = " and ".join(f"{words[f.name]} x{f.ratio:.2f}" for f in moved)
    return f"Physics, not a bug: {change} is {parts}; residual {_pct(residual.ratio)}."
