"""The verdict that knows its limits: physics, not physics, or not enough evidence.

`decompose.explain` does the arithmetic (observed / baseline = context factor x text
factor x residual). On a noisy 2-core host that arithmetic alone flips between "Physics"
and "Not physics" from one sweep to the next, extrapolates a 64-1024 sweep to 1900, and
trusts a step line that falls with context. `judge` wraps it with the checks an operator
would make by hand before believing it:

- the contexts asked about lie inside the swept ones (otherwise: sweep them, and here is
  the command);
- the step-time line rises with context (a falling one is a measurement problem);
- every sweep point rests on at least two requests, so there is a spread to resample;
- the text type, when inferred from the commit length, is not ambiguous;
- the baseline agrees with the model's own prediction for it;
- every factor has an interval: the sweep's requests are resampled within each point,
  the model refitted and the split recomputed (the observed and baseline figures are
  resampled too when they come from samples; a typed number has no interval).

Three outcomes, and only three: "physics" (the residual is within noise or small, and the
change splits into a context and a text factor), "not physics" (the residual lies outside
its interval and is big enough to matter), "not enough evidence" (anything that would
make either answer a guess).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from console.analysis.decompose import MOVED, FitError, ThroughputModel, fit
from console.analysis.intervals import (
    ChangeInterval,
    Interval,
    passage,
    percentile,
    pool,
    strata,
    usable,
)
from console.analysis.records import RequestSample

Outcome = Literal["physics", "not physics", "not enough evidence"]
OUTCOMES: tuple[Outcome, ...] = ("physics", "not physics", "not enough evidence")

RESAMPLES = 300  # refits per verdict: ~0.3 s of pure Python on a 40-request sweep
LEVEL = 0.95
MATTERS = 0.10  # a residual under 10% is not worth a bug hunt even when it is significant
WIDE = 0.15  # a residual interval wider than ± 15% cannot tell physics from a bug
EDGE = 0.10  # how far past the swept contexts a figure may sit and still be "inside"
TYPE_TOL = 0.10  # an observed commit within 10% of a type's commit could be that type
FALL = 0.05  # a step line that falls more than 5% over the sweep is a measurement problem
MIN_PER_POINT = 2  # requests per sweep point below which there is no spread to resample


# -- what was observed ------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """A tok/s figure to explain, where it was taken, and what it rests on.

    `requests` (a stored run) or `live` ((tok/s, commit) per live sample) are what the
    bootstrap resamples; a typed figure has neither and so no interval of its own."""

    tok_s: float
    context: float
    text_type: str | None = None  # None: infer it from `commit`
    commit: float | None = None
    step_s: float | None = None
    requests: tuple[RequestSample, ...] = ()
    live: tuple[tuple[float, float], ...] = ()
    source: str = "typed"

    @property
    def n(self) -> int:
        return len(self.requests) or len(self.live)

    @classmethod
    def typed(cls, tok_s: float, context: float, text_type: str | None = None) -> Observed:
        return cls(tok_s=tok_s, context=context, text_type=text_type)

    @classmethod
    def from_requests(
        cls, samples: Sequence[RequestSample], text_type: str | None = None, source: str = "run"
    ) -> Observed:
        """Pooled over the usable requests (tokens / time), at their mean decode context."""
        ok = usable(samples)
        if not ok:
            raise FitError("The run has no usable request (unflagged, with verify steps).")
        p = pool(ok)
        context = statistics.fmean(s.decode_context or s.context_tokens for s in ok)
        kinds = {s.text_type for s in ok}
        kind = text_type or (next(iter(kinds)) if len(kinds) == 1 else None)
        return cls(p.tok_s, context, kind, p.commit, p.step_s, tuple(ok), (), source)

    @classmethod
    def from_live(
        cls,
        pairs: Sequence[tuple[float, float]],
        *,
        tok_s: float,
        commit: float,
        step_s: float,
        context: float,
        text_type: str | None = None,
    ) -> Observed:
        return cls(tok_s, context, text_type, commit, step_s, (), tuple(pairs), "live")

    def resample(
        self, rng: random.Random, *, by_passage: bool = False
    ) -> tuple[float, float | None]:
        """(tok/s, commit) of one bootstrap draw of the samples behind this figure;
        `by_passage`: within each passage it read (see `paired`)."""
        layers = strata(self.requests, passage) if by_passage else None
        if layers is not None:
            p = pool([s for layer in layers for s in rng.choices(layer, k=len(layer))])
            return p.tok_s, p.commit
        if len(self.requests) >= 2:
            p = pool(rng.choices(self.requests, k=len(self.requests)))
            return p.tok_s, p.commit
        if len(self.live) >= 2:
            drawn = rng.choices(self.live, k=len(self.live))
            return statistics.median(t for t, _ in drawn), statistics.median(c for _, c in drawn)
        return self.tok_s, self.commit

    def as_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "context": self.context,
            "text_type": self.text_type,
            "commit": self.commit,
            "step_s": self.step_s,
            "n": self.n,
            "source": self.source,
        }


def typed_baseline(
    sweep: Sweep, tok_s: float | None, context: float | None, text_type: str | None
) -> Observed | None:
    """A typed baseline figure; without a context, at the shortest swept decode context
    (where a short-prompt baseline sits); without a text type, the observed one's."""
    if tok_s is None:
        return None
    if context is None:
        contexts = [s.decode_context or s.context_tokens for s in sweep.fitted]
        context = min(contexts) if contexts else 0.0
    return Observed.typed(tok_s, context, text_type)


# -- the record -------------------------------------------------------------------------


@dataclass(frozen=True)
class FactorRange:
    """One factor's multiplier on tok/s with its interval."""

    name: str  # "context" | "text" | "residual"
    ratio: Interval
    detail: str = ""

    @property
    def moved(self) -> bool:
        """Its interval excludes no change and it is more than `MOVED` (10%) off it."""
        return not self.ratio.contains(1.0) and _far(self.ratio.value, MOVED)

    def text(self) -> str:
        return ChangeInterval(self.ratio).text()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ratio": self.ratio.as_dict(), "moved": self.moved,
                "text": self.text(), "detail": self.detail}  # fmt: skip


@dataclass(frozen=True)
class Judgement:
    """The verdict on one observed figure: its outcome, why, and the arithmetic."""

    outcome: Outcome
    headline: str
    observed: Observed
    baseline: Observed | None = None
    text_type: str | None = None
    text_inferred: bool = False
    expected: Interval | None = None  # tok/s the baseline x factors (or the model) expects
    factors: tuple[FactorRange, ...] = ()
    baseline_check: FactorRange | None = None  # baseline / the model's prediction for it
    commit_check: FactorRange | None = None  # observed commit / what context and text explain
    reasons: tuple[str, ...] = ()  # why not enough evidence
    problems: tuple[str, ...] = ()  # measurement problems found on the way
    offer: str | None = None  # the command that would settle it
    offer_contexts: tuple[int, ...] = ()  # the prompt lengths it sweeps
    offer_text_types: tuple[str, ...] = ()  # and the text types
    lines: tuple[str, ...] = ()  # the arithmetic and notes, a line each
    model_contexts: tuple[float, float] | None = None
    sweep_requests: int = 0
    paired: bool = False  # intervals resampled within passages (see `paired`)

    def factor(self, name: str) -> FactorRange | None:
        return next((f for f in self.factors if f.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "headline": self.headline,
            "observed": self.observed.as_dict(),
            "baseline": self.baseline.as_dict() if self.baseline else None,
            "text_type": self.text_type,
            "text_inferred": self.text_inferred,
            "expected_tok_s": self.expected.as_dict() if self.expected else None,
            "factors": [f.as_dict() for f in self.factors],
            "baseline_check": self.baseline_check.as_dict() if self.baseline_check else None,
            "commit_residual": self.commit_check.as_dict() if self.commit_check else None,
            "reasons": list(self.reasons),
            "problems": list(self.problems),
            "offer": self.offer,
            "offer_contexts": list(self.offer_contexts),
            "offer_text_types": list(self.offer_text_types),
            "arithmetic": list(self.lines),
            "model_contexts": list(self.model_contexts) if self.model_contexts else None,
            "sweep_requests": self.sweep_requests,
            "paired": self.paired,
        }

    def text(self) -> str:
        out = [self.headline]
        out += [f"  {line}" for line in self.lines]
        out += [f"  measurement problem: {p}" for p in self.problems]
        if self.offer:
            out.append(f"  to settle it: {self.offer}")
        return "\n".join(out)


# -- the sweep behind the model ----------------------------------------------------------


@dataclass(frozen=True)
class Sweep:
    """The sweep requests a model is fitted from, grouped by point for resampling."""

    samples: tuple[RequestSample, ...]
    host: str = "HOST"
    context_limit: int | None = None

    @property
    def fitted(self) -> list[RequestSample]:
        return [s for s in self.samples if s.ok and s.step_time_s and s.commit_len
                and s.verify_steps and s.decode_context is not None]  # fmt: skip

    def groups(self) -> list[list[RequestSample]]:
        by: dict[tuple[str, float], list[RequestSample]] = {}
        for s in self.fitted:
            by.setdefault((s.text_type, round(s.decode_context or 0)), []).append(s)
        return list(by.values())

    def output_tokens(self) -> int:
        outs = [s.max_tokens for s in self.fitted]
        return statistics.median_low(outs) if outs else 64

    def prompt_contexts(self) -> list[int]:
        return sorted({s.context_tokens for s in self.fitted})

    def offer_contexts(self, needed: Sequence[float]) -> list[int]:
        """The swept prompt lengths plus the `needed` contexts as prompt lengths (a
        decode context is the prompt plus half the output), each clamped to fit."""
        out = self.output_tokens()
        top = None if self.context_limit is None else self.context_limit - out
        wanted = set(self.prompt_contexts())
        for c in needed:
            prompt = max(16, round(c - out / 2))
            wanted.add(prompt if top is None else min(prompt, top))
        if len(wanted) < 2:  # a step line needs two contexts: add a short and a longer one
            longer = 4 * max(wanted, default=256)
            wanted |= {64, longer if top is None else min(longer, top)}
        return sorted(wanted)

    def sweep_command(self, needed: Sequence[float], text_types: Sequence[str]) -> str:
        """`specconsole sweep ...` covering the swept contexts and the `needed` ones."""
        contexts = ",".join(str(c) for c in self.offer_contexts(needed))
        kinds = ",".join(sorted(set(text_types))) or "code"
        return (
            f"specconsole sweep {self.host} --contexts {contexts} --output "
            f"{self.output_tokens()} --text {kinds} --repeat 3"
        )


def _inside(sweep: Sweep, model: ThroughputModel, context: float) -> bool:
    """Inside the swept range, read either as a prompt length or a decode context (an
    operator types the one, the live series reports the other)."""
    lo = min([model.contexts[0], *sweep.prompt_contexts()])
    return lo * (1 - EDGE) <= context <= model.contexts[1] * (1 + EDGE)


# -- the split ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Split:
    context: float
    text: float
    residual: float
    expected: float
    baseline_ratio: float | None  # baseline / the model's own prediction for it
    # observed commit / the commit context and text explain; None without a measured one
    commit_residual: float | None = None


def _split(
    model: ThroughputModel,
    observed: float,
    ctx: float,
    kind: str,
    baseline: float | None,
    b_ctx: float,
    b_kind: str,
    commits: tuple[float | None, float | None] = (None, None),
) -> _Split:
    """observed / baseline = context x text x residual, through the model's predictions.
    Without a baseline the model's own figure at the baseline point stands in for it, so
    the residual is then observed against the model's prediction."""
    at_base = model.predict(b_ctx, b_kind)
    moved_ctx = model.predict(ctx, b_kind)
    here = model.predict(ctx, kind)
    ctx_factor, text_factor = moved_ctx / at_base, here / moved_ctx
    start = at_base if baseline is None else baseline
    expected = start * ctx_factor * text_factor
    # Commit alone, the same way: a flag or drafter change shows in commit length even
    # where a cheaper round hides it in tok/s, and commit does not drift with host load.
    obs_commit, base_commit = commits
    commit_residual = None
    if obs_commit is not None:
        here_c, base_c = model.commit_at(kind, ctx), model.commit_at(b_kind, b_ctx)
        expected_c = here_c if base_commit is None else base_commit * here_c / base_c
        commit_residual = obs_commit / expected_c
    return _Split(
        ctx_factor,
        text_factor,
        observed / expected,
        expected,
        None if baseline is None else baseline / at_base,
        commit_residual,
    )


def paired(sweep: Sweep, observed: Observed, baseline: Observed | None) -> bool:
    """Whether the figures read exactly the passages the sweep read at their points, each
    passage at least twice everywhere.

    Greedy decoding commits the same tokens in the same rounds on a passage every time,
    so the model's figure at a point and a figure taken on the same passages share their
    commit exactly: the passage-to-passage spread in commit (2.0-12.6 on the bundled pair)
    cancels in the residual, and what is left to resample is timing, within each passage
    (`intervals.strata`). Figures on other passages (live traffic, a typed prompt) keep
    the plain bootstrap: there the passage spread is part of the uncertainty."""
    groups: dict[tuple[str, float], set[str]] = {}
    for g in sweep.groups():
        if strata(g, passage) is None:
            return False
        groups[(g[0].text_type, round(g[0].decode_context or 0))] = {passage(s) for s in g}
    for figure in (observed, baseline):
        if figure is None:
            continue
        if len(figure.requests) < 2 or strata(figure.requests, passage) is None:
            return False
        keys = {(s.text_type, round(s.decode_context or 0)) for s in figure.requests}
        swept = set().union(*(groups.get(k, set()) for k in keys))
        if {passage(s) for s in figure.requests} != swept:
            return False
    return True


def _interval(point: float, draws: list[float]) -> Interval:
    if not draws:
        return Interval(point, point, point)
    tail = (1 - LEVEL) / 2
    lo, hi = percentile(draws, tail), percentile(draws, 1 - tail)
    return Interval(point, min(lo, point), max(hi, point))


def _draws(
    sweep: Sweep,
    observed: Observed,
    baseline: Observed | None,
    ctx_args: tuple[float, str, float, str],
    *,
    seed: int,
    resamples: int,
    by_passage: bool = False,
) -> list[_Split]:
    """The split recomputed on `resamples` bootstrap draws: the sweep's requests resampled
    within each point (so every point stays in the fit), the model refitted, and the
    observed and baseline figures redrawn from their own samples; `by_passage` (see
    `paired`): every one of them within the passages it read."""
    rng = random.Random(seed)
    groups = [(strata(g, passage) if by_passage else None) or [g] for g in sweep.groups()]
    ctx, kind, b_ctx, b_kind = ctx_args
    out = []
    for _ in range(resamples):
        drawn = [s for g in groups for layer in g for s in rng.choices(layer, k=len(layer))]
        try:
            model = fit(drawn)
            obs, obs_c = observed.resample(rng, by_passage=by_passage)
            base, base_c = (
                baseline.resample(rng, by_passage=by_passage)
                if baseline is not None
                else (None, None)
            )
            commits = (obs_c if observed.n >= 2 else None, base_c)
            out.append(_split(model, obs, ctx, kind, base, b_ctx, b_kind, commits))
        except (FitError, ZeroDivisionError):
            continue
    return out


# -- the text type -----------------------------------------------------------------------


@dataclass(frozen=True)
class TypeGuess:
    """Which swept text types the observed commit length could be."""

    candidates: tuple[str, ...]  # nearest first
    commit: float

    @property
    def certain(self) -> bool:
        return len(self.candidates) == 1


def guess_type(model: ThroughputModel, observed: Observed, seed: int = 0) -> TypeGuess | None:
    """The types whose commit at the observed context lies within `TYPE_TOL` of the
    observed commit (and its interval, when it comes from samples). None without a
    commit length to go by."""
    if observed.commit is None:
        return None
    draws = []
    rng = random.Random(seed)
    if observed.n >= 2:
        draws = [c for _ in range(200) if (c := observed.resample(rng)[1]) is not None]
    spread = _interval(observed.commit, draws)
    lo, hi = spread.low * (1 - TYPE_TOL), spread.high * (1 + TYPE_TOL)
    at = {k: model.commit_at(k, observed.context) for k in model.commit}
    near = sorted(at, key=lambda k: abs(at[k] - observed.commit))
    return TypeGuess(tuple(k for k in near if lo <= at[k] <= hi), observed.commit)


# -- the verdict -------------------------------------------------------------------------


def judge(
    sweep: Sweep,
    observed: Observed,
    baseline: Observed | None = None,
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> Judgement:
    """The verdict on `observed` (against `baseline`, or against the model when None),
    with the model fitted from `sweep`. A baseline without a text type takes the observed
    one; without a context, the shortest swept."""
    base = Judgement(
        "not enough evidence", "", observed, baseline, sweep_requests=len(sweep.fitted)
    )
    try:
        model = fit(sweep.samples)
    except FitError as exc:
        reason = str(exc).rstrip(".")
        return _refuse(base, [reason[:1].lower() + reason[1:]], sweep, [observed.context],
                       [observed.text_type or "code"])  # fmt: skip
    base = replace(base, model_contexts=model.contexts, text_type=observed.text_type)
    if observed.text_type is None:  # named even when the verdict refuses, as a hint only
        guess = guess_type(model, observed, seed)
        nearest = guess.candidates[0] if guess and guess.candidates else None
        base = replace(base, text_type=nearest, text_inferred=True)
    kinds = [observed.text_type] if observed.text_type else []
    if baseline is not None and baseline.text_type:
        kinds.append(baseline.text_type)
    unknown = [k for k in kinds if k not in model.commit]
    if unknown:
        reason = (f"the sweep measured no {unknown[0]!r} text (it has "
                  f"{', '.join(sorted(model.commit))})")  # fmt: skip
        return _refuse(base, [reason], sweep, [observed.context], kinds)
    outside = [c for c in (observed.context, baseline and baseline.context) if c
               and not _inside(sweep, model, c)]  # fmt: skip
    if outside:
        lo, hi = model.contexts
        reason = (f"context {outside[0]:.0f} is outside the swept contexts ({lo:.0f}-{hi:.0f}); "
                  "the verdict does not extrapolate")  # fmt: skip
        return _refuse(base, [reason], sweep, outside, kinds or sorted(model.commit))
    falling = _falling(model)
    if falling:
        return _refuse(replace(base, problems=(falling,)), [
            "the step-time line falls with context, which the KV cache cannot do"],
            sweep, [], sorted(model.commit), again=True)  # fmt: skip
    return _judge_fitted(base, sweep, model, observed, baseline, seed, resamples)


def _falling(model: ThroughputModel) -> str | None:
    """A step line that falls by more than `FALL` across the swept contexts: attention
    over a growing KV cache cannot get cheaper, so the sweep measured something else (a
    busy host, warm-up). A line flat within that is the noise of a cheap model."""
    lo, hi = model.contexts
    lines = {"all texts": model.step, **model.step_by_type}
    bad = {name: line.at(hi) / line.at(lo) - 1 for name, line in lines.items()
           if line.at(lo) > 0 and line.at(hi) < line.at(lo) * (1 - FALL)}  # fmt: skip
    if not bad:
        return None
    worst = min(bad.values())
    return (f"step time falls with context ({worst:.0%} from {lo:.0f} to {hi:.0f} on "
            f"{', '.join(bad)}): noise, another process or warm-up, not a finding")  # fmt: skip


def _refuse(
    base: Judgement,
    reasons: list[str],
    sweep: Sweep,
    needed: Sequence[float],
    kinds: Sequence[str],
    *,
    again: bool = False,
) -> Judgement:
    """Not enough evidence, with the sweep that would give it."""
    offering = bool(needed or again or not sweep.fitted)
    return replace(
        base,
        outcome="not enough evidence",
        headline=f"Not enough evidence: {reasons[0]}.",
        reasons=tuple(base.reasons) + tuple(reasons),
        offer=sweep.sweep_command(needed, kinds) if offering else None,
        offer_contexts=tuple(sweep.offer_contexts(needed)) if offering else (),
        offer_text_types=tuple(sorted(set(kinds)) or ("code",)) if offering else (),
    )


def _judge_fitted(
    base: Judgement,
    sweep: Sweep,
    model: ThroughputModel,
    observed: Observed,
    baseline: Observed | None,
    seed: int,
    resamples: int,
) -> Judgement:
    """The checks that need the fitted model: the text type, the split and its interval."""
    notes: list[str] = []
    if observed.text_type:
        candidates, inferred = [observed.text_type], False
    else:
        guess = guess_type(model, observed, seed)
        inferred = True
        if guess is None or not guess.candidates:
            at = ", ".join(f"{k} {model.commit_at(k, observed.context):.2f}" for k in model.commit)
            commit = "no commit length" if guess is None else f"commit {guess.commit:.2f}"
            reason = (f"the text resembles none of the swept types ({commit}; the sweep has "
                      f"{at}); give the text type")  # fmt: skip
            return _refuse(base, [reason], sweep, [], [])
        candidates = list(guess.candidates)
        if not guess.certain:
            notes.append(
                f"text type uncertain: commit {guess.commit:.2f} fits {' and '.join(candidates)}; "
                "the intervals cover every one of them"
            )
    judged = [_one(base, sweep, model, observed, baseline, k, inferred, seed, resamples)
              for k in candidates]  # fmt: skip
    if len(judged) == 1:
        return replace(judged[0], lines=judged[0].lines + tuple(notes))
    return _merge(judged, notes, base)


def _merge(judged: list[Judgement], notes: list[str], base: Judgement) -> Judgement:
    """Several text types fit the observed commit: one verdict only if they all agree,
    with every interval widened to cover them all."""
    first = judged[0]
    if len({j.outcome for j in judged}) > 1:
        kinds = ", ".join(f"{j.text_type}: {j.outcome}" for j in judged)
        reason = f"the text type is uncertain and the verdict depends on it ({kinds}); give it"
        return replace(first, outcome="not enough evidence",
                       headline=f"Not enough evidence: {reason}.",
                       reasons=first.reasons + (reason,),
                       lines=first.lines + tuple(notes))  # fmt: skip

    def widen(name: str) -> FactorRange:
        ranges = [f for j in judged if (f := j.factor(name)) is not None]
        lo, hi = min(f.ratio.low for f in ranges), max(f.ratio.high for f in ranges)
        head = ranges[0]
        return replace(head, ratio=Interval(head.ratio.value, lo, hi))

    factors = tuple(widen(f.name) for f in first.factors)
    return replace(first, factors=factors, lines=first.lines + tuple(notes))


def _one(
    base: Judgement,
    sweep: Sweep,
    model: ThroughputModel,
    observed: Observed,
    baseline: Observed | None,
    kind: str,
    inferred: bool,
    seed: int,
    resamples: int,
) -> Judgement:
    """The verdict for one text type of the observed figure."""
    b_kind = (baseline.text_type if baseline else None) or kind
    if baseline is None:  # the model's own best short-context figure is the reference
        b_kind = kind
    b_ctx = baseline.context if baseline is not None else model.contexts[0]
    # a commit residual only where the commit rests on samples (a typed figure has none)
    commits = (observed.commit if observed.n >= 2 else None,
               baseline.commit if baseline is not None else None)  # fmt: skip
    point = _split(model, observed.tok_s, observed.context, kind,
                   baseline.tok_s if baseline else None, b_ctx, b_kind, commits)  # fmt: skip
    by_passage = paired(sweep, observed, baseline)
    draws = _draws(sweep, observed, baseline, (observed.context, kind, b_ctx, b_kind),
                   seed=seed, resamples=resamples, by_passage=by_passage)  # fmt: skip
    pred = model.predict(observed.context, kind)
    factors = (
        FactorRange("context", _interval(point.context, [d.context for d in draws]),
                    f"{b_kind} at context {b_ctx:.0f} -> {observed.context:.0f}"),
        FactorRange("text", _interval(point.text, [d.text for d in draws]),
                    f"{b_kind} -> {kind} at context {observed.context:.0f}"),
        FactorRange("residual", _interval(point.residual, [d.residual for d in draws]),
                    f"observed {observed.tok_s:.1f} vs expected {point.expected:.1f} tok/s"),
    )  # fmt: skip
    check = _baseline_check(model, baseline, b_ctx, b_kind, point, draws)
    expected = _interval(point.expected, [d.expected for d in draws])
    lines = _arithmetic(model, observed, baseline, kind, b_ctx, b_kind, factors, expected, pred)
    if by_passage:
        lines.append("paired by passage: the figures read the sweep's passages, so intervals "
                     "resample timing within each passage")  # fmt: skip
    if check is not None and check.moved:
        lines.append(f"baseline check: {check.detail} ({check.text()}): the sweep may not "
                     "describe the baseline's engine or host load")  # fmt: skip
    commit = None
    if point.commit_residual is not None:
        commit = FactorRange("commit", _interval(point.commit_residual, [
            d.commit_residual for d in draws if d.commit_residual is not None]),
            f"observed commit {observed.commit:.2f} vs what context and text explain")  # fmt: skip
        lines.append(f"commit residual: {commit.text()} ({commit.detail})")
    outcome, reasons = _outcome(_hard_gaps(sweep, check), factors[2], commit)
    j = replace(base, outcome=outcome, text_type=kind, text_inferred=inferred,
                expected=expected, factors=factors, baseline_check=check, lines=tuple(lines),
                reasons=tuple(reasons), commit_check=commit, paired=by_passage)  # fmt: skip
    return replace(j, headline=_headline(j))


def _baseline_check(
    model: ThroughputModel,
    baseline: Observed | None,
    b_ctx: float,
    b_kind: str,
    point: _Split,
    draws: list[_Split],
) -> FactorRange | None:
    """The baseline against the model's own prediction for it: a sweep of another engine
    (other flags, a stale sweep) explains nothing about this baseline."""
    if baseline is None or point.baseline_ratio is None:
        return None
    ratios = [d.baseline_ratio for d in draws if d.baseline_ratio is not None]
    detail = (f"baseline {baseline.tok_s:.1f} vs the model's "
              f"{model.predict(b_ctx, b_kind):.1f} tok/s")  # fmt: skip
    return FactorRange("baseline", _interval(point.baseline_ratio, ratios), detail)


def _far(ratio: float, limit: float) -> bool:
    return abs(math.log(max(ratio, 1e-9))) > math.log(1 + limit)


def _hard_gaps(sweep: Sweep, check: FactorRange | None) -> list[str]:
    """What makes any answer a guess, whatever the residual says."""
    reasons = []
    thin = min((len(g) for g in sweep.groups()), default=0)
    if thin < MIN_PER_POINT:
        reasons.append(
            f"a sweep point rests on {thin} request (at least {MIN_PER_POINT} give a spread "
            "to resample); sweep again with --repeat 3"
        )
    if check is not None and check.moved and _far(check.ratio.value, 2 * MATTERS):
        reasons.append(
            f"the baseline is {check.text()} off the model's own prediction for it: the "
            "sweep does not describe the baseline (other flags, or the host's load drifted "
            "between them); sweep again next to it, with the baseline's flags"
        )
    return reasons


def _outcome(
    hard: list[str], residual: FactorRange, commit: FactorRange | None = None
) -> tuple[Outcome, list[str]]:
    """Not physics only when the residual's interval (of tok/s, or of commit length alone)
    excludes no change and the residual is big enough to matter; physics only when the
    interval is narrow enough to say so."""
    r = residual.ratio
    if hard:
        return "not enough evidence", hard
    if not r.contains(1.0) and _far(r.value, MATTERS):
        return "not physics", []
    if (
        commit is not None
        and not commit.ratio.contains(1.0)
        and _far(commit.ratio.value, 2 * MATTERS)
    ):
        return "not physics", []
    if r.rel_half_width > WIDE:
        return "not enough evidence", [
            f"the residual's interval is ± {r.rel_half_width:.0%}, too wide to tell physics "
            "from a bug; more requests (--repeat) narrow it"
        ]
    return "physics", []


def _change(j: Judgement) -> str:
    obs = j.observed.tok_s
    if j.baseline is None:
        return f"{obs:.1f} tok/s"
    return f"{j.baseline.tok_s:.1f} -> {obs:.1f} tok/s ({obs / j.baseline.tok_s - 1:+.0%})"


def _headline(j: Judgement) -> str:
    residual = j.factor("residual")
    assert residual is not None
    if j.outcome == "not enough evidence":
        return f"Not enough evidence: {j.reasons[0]}."
    commit = j.commit_check
    if j.outcome == "not physics" and (residual.ratio.contains(1.0) or not _far(
            residual.ratio.value, MATTERS)) and commit is not None:  # fmt: skip
        return (
            f"Not physics: at {_change(j)} the commit length is {commit.text()} off what context "
            "and text explain (tok/s residual "
            f"{residual.text()}): the drafter or a flag changed; worth a bug hunt."
        )
    if j.outcome == "not physics":
        return (
            f"Not physics: {_change(j)} is {residual.text()} off what context and text "
            "explain; worth a bug hunt (a flag, the drafter, the host, the measurement)."
        )
    parts = []
    for name, words in (("context", "context"), ("text", "text")):
        f = j.factor(name)
        if f is not None:
            state = "moved" if f.moved else "did not move"
            parts.append(f"{words} x{f.ratio.value:.2f} [{f.ratio.low:.2f}–{f.ratio.high:.2f}] "
                         f"({state})")  # fmt: skip
    return f"Physics: {_change(j)} = {' and '.join(parts)}; residual {residual.text()}."


def _arithmetic(
    model: ThroughputModel,
    observed: Observed,
    baseline: Observed | None,
    kind: str,
    b_ctx: float,
    b_kind: str,
    factors: tuple[FactorRange, ...],
    expected: Interval,
    predicted: float,
) -> list[str]:
    ctx = observed.context
    lines = [
        f"model at context {ctx:.0f}, {kind}: commit {model.commit_at(kind, ctx):.2f} / step "
        f"{model.step_at(ctx, kind) * 1000:.3g} ms = {predicted:.1f} tok/s",
        f"observed: {observed.tok_s:.1f} tok/s ({_rests_on(observed)})",
    ]
    if baseline is not None:
        lines.append(f"baseline: {baseline.tok_s:.1f} tok/s at context {b_ctx:.0f}, {b_kind} "
                     f"({_rests_on(baseline)})")  # fmt: skip
    else:
        lines.append(f"no baseline: the model's {model.predict(b_ctx, b_kind):.1f} tok/s at "
                     f"context {b_ctx:.0f} ({b_kind}) stands in for it")  # fmt: skip
    for f in factors[:2]:
        lines.append(f"{f.name}: {f.detail}: tok/s x{f.ratio.value:.2f} "
                     f"[{f.ratio.low:.2f}–{f.ratio.high:.2f}]")  # fmt: skip
    lines.append(f"expected {expected.text('{:.1f}')} tok/s; residual {factors[2].text()}")
    if observed.commit is not None and observed.step_s is not None:
        c, s = model.commit_at(kind, ctx), model.step_at(ctx, kind)
        lines.append(f"measured: commit {observed.commit:.2f} ({observed.commit / c - 1:+.0%} vs "
                     f"model), step {observed.step_s * 1000:.3g} ms ({observed.step_s / s - 1:+.0%}"
                     " vs model)")  # fmt: skip
    return lines + [f"note: {n}" for n in model.notes]


def _rests_on(o: Observed) -> str:
    if o.n == 0:
        return "typed: no interval of its own"
    return f"{o.n} {'requests' if o.requests else 'live samples'}, resampled"
