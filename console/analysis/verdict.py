"""The verdict that knows its limits: physics, not physics, or not enough evidence.

`decompose.explain` does the arithmetic (observed / baseline = context factor x text
factor x residual). On a noisy 2-core host that arithmetic alone flips between "Physics"
and "Not physics" from one sweep to the next, extrapolates a 64-1024 sweep to 1900, and
trusts a step line that falls with context. `judge` wraps it with the checks an operator
would make by hand before believing it:

- a typed prompt length is read as the operator meant it (`verdict_records`: converted to
  the model's mid-decode context with the figure's output length) and one beyond the
  engine's context length is refused in one sentence naming the limit;
- the contexts asked about lie inside the swept ones (otherwise: sweep them, and here is
  the command, run exactly as printed it covers them);
- the step-time line rises with context (one that falls beyond the sweep's own noise is
  a measurement problem);
- every sweep point rests on at least two requests, so there is a spread to resample;
- the text type, when inferred from the commit length, is not ambiguous;
- the baseline agrees with the model's own prediction for it;
- every factor has an interval: the sweep's requests are resampled within each point,
  the model refitted and the split recomputed; figures from samples are resampled too,
  and a typed figure is drawn from this host's noise at its point (`typed_noise`); with
  no noise to draw from it is "not enough evidence" and the sweep that measures it. A
  factor equal to 1 by construction (the same context, the same text) says "exact".

Three outcomes, and only three: "physics" (the residual is within noise or small, and the
change splits into a context and a text factor), "not physics" (the residual lies outside
its interval and is big enough to matter), "not enough evidence" (anything that would
make either answer a guess).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from console.analysis import verdict_wording as words
from console.analysis.answer import far
from console.analysis.decompose import FitError, ThroughputModel, fit
from console.analysis.intervals import Interval
from console.analysis.noise_profile import Z95
from console.analysis.passage_spread import passage_spread
from console.analysis.settle_plan import SettlePlan
from console.analysis.step_line_check import falling_step_line
from console.analysis.thresholds import CHANGE_LEVEL, CHECK_LEVEL, EDGE, MATTERS, TYPE_TOL
from console.analysis.typed_noise import noise_at
from console.analysis.verdict_outcome import decide, passage_led
from console.analysis.verdict_records import (
    OUTCOMES,
    FactorRange,
    Judgement,
    Observed,
    Outcome,
    Reach,
    Sweep,
    beyond_limit,
    typed_baseline,
)
from console.analysis.verdict_split import (
    Split,
    check_same_prompts,
    matched_sweep,
    paired,
    strata_everywhere,
    typed_only,
)
from console.analysis.verdict_split import draws as _draws
from console.analysis.verdict_split import interval as _interval
from console.analysis.verdict_split import split as _split

__all__ = [
    "OUTCOMES", "FactorRange", "Judgement", "Observed", "Outcome", "Reach", "Sweep",
    "TypeGuess", "guess_type", "judge", "paired", "typed_baseline", "typed_verdict",
    "with_host_noise",
]  # fmt: skip

RESAMPLES, MIN_PER_POINT = 300, 2  # refits a verdict (~0.3 s); requests a point at least


def _inside(model: ThroughputModel, context: float) -> bool:
    """Inside the swept mid-decode contexts (within `EDGE`)."""
    lo, hi = model.contexts
    return lo * (1 - EDGE) <= context <= hi * (1 + EDGE)


def _prepare(sweep: Sweep, figure: Observed | None) -> Observed | None:
    """A typed prompt length read with the sweep's output (when the operator gave none),
    and a typed figure's noise at its point (calibration first, else the sweep's)."""
    if figure is None:
        return None
    return _with_noise(sweep, figure.at_decode(sweep.output_tokens()), figure.text_type)


def with_host_noise(sweep: Sweep, figure: Observed) -> Observed:
    """A typed figure as the verdict reads it: its prompt read with the sweep's output
    where it has none, with this host's noise and (held out) the passage term."""
    return _prepare(sweep, figure) or figure


def _with_noise(sweep: Sweep, figure: Observed, kind: str | None) -> Observed:
    if figure.n < 2 and figure.noise is None and kind:  # typed, or one sample: no spread
        noise = noise_at(sweep.samples, kind, figure.context,
                         source=sweep.source, profile=sweep.noise_profile)  # fmt: skip
        figure = replace(figure, noise=noise)
    if figure.is_typed and figure.held_out and kind and (
            figure.passages is None or figure.passages.text_type != kind):  # fmt: skip
        timing = figure.noise.sigma if figure.noise is not None else 0.0
        figure = replace(figure, passages=passage_spread(sweep.fitted, kind, timing))
    return figure


def _beyond(sweep: Sweep, figures: Sequence[Observed | None]) -> str | None:
    for f in figures:
        if f is not None and f.prompt is not None and f.output is not None:
            refused = beyond_limit(f.prompt, f.output, sweep.context_limit)
            if refused:
                return refused
    return None


def _no_noise(figures: Sequence[Observed | None]) -> list[Observed]:
    return [f for f in figures
            if f is not None and f.n < 2 and f.noise is None and f.text_type]  # fmt: skip


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


def _baseline_check(
    model: ThroughputModel,
    baseline: Observed | None,
    b_ctx: float,
    b_kind: str,
    point: Split,
    draws: list[Split],
) -> FactorRange | None:
    """The baseline against the model's own prediction for it (a sweep of another engine
    explains nothing about it), at the 99% of the checks that refuse an answer."""
    if baseline is None or point.baseline_ratio is None:
        return None
    ratios = [d.baseline_ratio for d in draws if d.baseline_ratio is not None]
    detail = (f"baseline {baseline.tok_s:.1f} vs the model's "
              f"{model.predict(b_ctx, b_kind):.1f} tok/s")  # fmt: skip
    return FactorRange("baseline", _interval(point.baseline_ratio, ratios, CHECK_LEVEL), detail)


def _hard_gaps(sweep: Sweep, check: FactorRange | None, exact: bool = False) -> list[str]:
    """What makes any answer a guess, whatever the residual says (a model that does not
    describe the baseline only where the answer uses it: not `exact`, both factors 1)."""
    reasons = []
    thin = min((len(g) for g in sweep.groups()), default=0)
    if thin < MIN_PER_POINT:
        reasons.append(
            f"a sweep point rests on {thin} request (at least {MIN_PER_POINT} give a spread "
            "to resample); sweep again with --repeat 3"
        )
    if check is not None and check.moved and far(check.ratio.value, 2 * MATTERS) and not exact:
        reasons.append(
            f"the baseline is {check.text()} off the model's own prediction for it: the "
            "sweep does not describe the baseline (other flags, or the host's load drifted "
            "between them); sweep again next to it, with the baseline's flags"
        )
    return reasons


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
    observed = _prepare(sweep, observed) or observed
    baseline = _prepare(sweep, baseline)
    # Figures that read some of the sweep's passages are judged against the sweep's reads
    # of those same passages: commit is then the same tokens on both sides of the model.
    matched = matched_sweep(sweep, observed, baseline)
    if matched is not None:
        sweep = matched
    base = Judgement(
        "not enough evidence", "", observed, baseline, sweep_requests=len(sweep.fitted)
    )
    refused = _beyond(sweep, (observed, baseline))
    if refused:  # no sweep on this engine reaches it: nothing to offer
        reason = refused[:1].lower() + refused[1:].rstrip(".")
        return replace(base, headline=refused, reasons=(reason,))
    try:
        model = fit(sweep.samples)
    except FitError as exc:
        reason = str(exc).rstrip(".")
        return _refuse(base, [reason[:1].lower() + reason[1:]], sweep, [Reach.of(observed)],
                       [observed.text_type or "code"])  # fmt: skip
    base = replace(base, model_contexts=model.contexts, text_type=observed.text_type)
    if observed.text_type is None:  # named even when the verdict refuses, as a hint only
        guess = guess_type(model, observed, seed)
        nearest = guess.candidates[0] if guess and guess.candidates else None
        base = replace(base, text_type=nearest, text_inferred=True)
    kinds = [observed.text_type] if observed.text_type else []
    if baseline is not None and baseline.text_type:
        kinds.append(baseline.text_type)
    figures = [f for f in (observed, baseline) if f is not None]
    unknown = [k for k in kinds if k not in model.commit]
    if unknown:
        reason = (f"the sweep measured no {unknown[0]!r} text (it has "
                  f"{', '.join(sorted(model.commit))})")  # fmt: skip
        return _refuse(base, [reason], sweep, [Reach.of(observed)], kinds)
    outside = [f for f in figures if not _inside(model, f.context)]
    if outside:
        lo, hi = model.contexts
        reason = (f"{outside[0].where()} is outside the swept contexts (mid-decode "
                  f"{lo:.0f}-{hi:.0f}); the verdict does not extrapolate")  # fmt: skip
        return _refuse(base, [reason], sweep, [Reach.of(f) for f in outside],
                       kinds or sorted(model.commit))  # fmt: skip
    falling = falling_step_line(model, sweep, seed)
    if falling:
        return _refuse(replace(base, problems=(falling,)), [
            "the step-time line falls with context, which the KV cache cannot do"],
            sweep, [], sorted(model.commit), again=True)  # fmt: skip
    bare = _no_noise(figures)
    if bare:
        reason = (f"{bare[0].tok_s:.1f} tok/s ({words.rests_on(bare[0])}) has no noise "
                  "measured on this host "
                  f"(no calibration, and no sweep point with {MIN_PER_POINT}+ requests near "
                  f"{bare[0].where()}); this sweep measures it")  # fmt: skip
        return _refuse(base, [reason], sweep, [Reach.of(f) for f in bare],
                       kinds or sorted(model.commit), again=True)  # fmt: skip
    spreadless = [f for f in figures
                  if f.is_typed and f.held_out and not f.same_prompts and f.text_type
                  and f.passages is None]  # fmt: skip
    if spreadless:
        f = spreadless[0]
        reason = (f"{f.tok_s:.1f} tok/s was measured on your own prompts, and the sweep read "
                  f"one passage a point of {f.text_type}, so how far passages differ is not "
                  "measured; this sweep reads several")  # fmt: skip
        return _refuse(base, [reason], sweep, [Reach.of(f) for f in figures],
                       kinds or sorted(model.commit), again=True)  # fmt: skip
    return _judge_fitted(base, sweep, model, observed, baseline, seed, resamples)


def _refuse(
    base: Judgement,
    reasons: list[str],
    sweep: Sweep,
    needed: Sequence[Reach],
    kinds: Sequence[str],
    *,
    again: bool = False,
) -> Judgement:
    """Not enough evidence, with the sweep that would give it."""
    offering = bool(needed or again or not sweep.fitted)
    out = sweep.offer_output(needed) if offering else None
    return replace(
        base,
        # what was asked, read as the model reads it, even when no answer follows
        lines=(
            *base.lines,
            *words.figure_lines(base.observed, base.baseline),
            *words.noise_lines(base.observed, base.baseline),
        ),
        outcome="not enough evidence",
        headline=f"Not enough evidence: {reasons[0]}.",
        reasons=tuple(base.reasons) + tuple(reasons),
        offer=sweep.sweep_command(needed, kinds) if offering else None,
        offer_contexts=tuple(sweep.offer_contexts(needed, out)) if offering else (),
        offer_text_types=tuple(sorted(set(kinds)) or ("code",)) if offering else (),
        offer_output=out,
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
    return _merge(judged, notes)


def _merge(judged: list[Judgement], notes: list[str]) -> Judgement:
    """Several text types fit the observed commit: one verdict only if they all agree,
    with every interval widened to cover them all, and the headline and arithmetic
    quoting the widened ones."""
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
        exact = head.exact if all(f.exact for f in ranges) else ""
        return replace(head, ratio=Interval(head.ratio.value, lo, hi), exact=exact)

    factors = tuple(widen(f.name) for f in first.factors)
    spans = [j.expected for j in judged if j.expected is not None]
    expected = (
        Interval(spans[0].value, min(e.low for e in spans), max(e.high for e in spans))
        if spans else None
    )  # fmt: skip
    swap = {words.factor_line(old): words.factor_line(new)
            for old, new in zip(first.factors[:2], factors[:2], strict=True)}  # fmt: skip
    if first.expected is not None and expected is not None:
        swap[words.residual_line(first.expected, first.factors[2])] = words.residual_line(
            expected, factors[2])  # fmt: skip
    lines = tuple(swap.get(line, line) for line in first.lines) + tuple(notes)
    old, new = first.factors[2].text(), factors[2].text()
    reasons = tuple(r.replace(old, new) for r in first.reasons)  # the one residual, widened
    merged = replace(first, factors=factors, expected=expected, lines=lines, reasons=reasons)
    return replace(merged, headline=words.headline(merged))


def _one(
    base: Judgement,
    sweep: Sweep,
    model: ThroughputModel,
    observed: Observed,
    baseline: Observed | None,
    text: str,
    inferred: bool,
    seed: int,
    resamples: int,
) -> Judgement:
    """The verdict for one text type of the observed figure."""
    b_text = (baseline.text_type if baseline else None) or text
    observed = _with_noise(sweep, observed, text)
    baseline = _with_noise(sweep, baseline, b_text) if baseline is not None else None
    b_ctx = baseline.context if baseline is not None else model.contexts[0]
    commits = (observed.commit if observed.n >= 2 else None,  # typed figures have none
               baseline.commit if baseline is not None else None)  # fmt: skip
    point = _split(model, observed.tok_s, observed.context, text,
                   baseline.tok_s if baseline else None, b_ctx, b_text, commits)  # fmt: skip
    by_passage = paired(sweep, observed, baseline)
    sweep_by_passage = by_passage or typed_only(observed, baseline)
    draws = _draws(sweep, observed, baseline, (observed.context, text, b_ctx, b_text),
                   seed=seed, resamples=resamples, by_passage=by_passage,
                   sweep_by_passage=sweep_by_passage)  # fmt: skip
    same_ctx = "same mid-decode context" if round(observed.context) == round(b_ctx) else ""
    factors = (
        FactorRange("context", _interval(point.context, [d.context for d in draws]),
                    f"{b_text} at mid-decode context {b_ctx:.0f} -> {observed.context:.0f}",
                    same_ctx),
        FactorRange("text", _interval(point.text, [d.text for d in draws]),
                    f"{b_text} -> {text} at mid-decode context {observed.context:.0f}",
                    "same text" if b_text == text else ""),
        FactorRange("residual", _interval(point.residual, [d.residual for d in draws]),
                    f"observed {observed.tok_s:.1f} vs expected {point.expected:.1f} tok/s",
                    decision=_interval(point.residual, [d.residual for d in draws],
                                       CHANGE_LEVEL)),
    )  # fmt: skip
    check = _baseline_check(model, baseline, b_ctx, b_text, point, draws)
    expected = _interval(point.expected, [d.expected for d in draws])
    lines = words.arithmetic(model, observed, baseline, text, b_ctx, b_text, factors, expected)
    if by_passage or observed.same_prompts:
        lines.append(words.PAIRED_LINE if by_passage else words.SAME_PROMPTS_LINE)
    elif words.held_out(observed, baseline):
        lines.append(words.held_out_line(observed, baseline))
    elif sweep_by_passage and strata_everywhere(sweep):
        lines.append("typed figures are read as figures of the sweep's own prompts: the "
                     "sweep is resampled within each of its passages (figures from other "
                     "prompts can differ by their text's commit)")  # fmt: skip
    if check is not None and check.moved:
        lines.append(f"baseline check: {check.detail} ({check.text()}): the sweep may not "
                     "describe the baseline's engine or host load")  # fmt: skip
    commit = None
    if point.commit_residual is not None:
        ratio = _interval(point.commit_residual, [
            d.commit_residual for d in draws if d.commit_residual is not None])  # fmt: skip
        # Paired by passage, greedy decoding commits the same tokens on every read of a
        # passage: the commit residual has no spread to resample, it is exact.
        exact = "greedy commit on the same passages" if by_passage and (
            ratio.low == ratio.high) else ""  # fmt: skip
        commit = FactorRange("commit", ratio, f"observed commit {observed.commit:.2f} vs what "
                             "context and text explain", exact)  # fmt: skip
        lines.append(f"commit residual: {commit.text()} ({commit.detail})")
    drift = Z95 * math.hypot(observed.drift_log_sd, baseline.drift_log_sd if baseline else 0.0)
    # The same prompts re-sent share one passage effect: it cancels in the residual.
    passages = 0.0 if observed.same_prompts else Z95 * math.hypot(
        observed.passage_log_sd(), baseline.passage_log_sd() if baseline else 0.0)  # fmt: skip
    plan = SettlePlan.for_figures(sweep.host, observed, baseline, sweep.context_limit)
    how = words.confirm_how(plan, observed, baseline)
    outcome, reasons = decide(_hard_gaps(sweep, check, all(f.exact for f in factors[:2])),
                              factors, commit, drift, passages, how)  # fmt: skip
    # Settling decides an open answer and confirms a passage-led "not physics".
    led = outcome != "physics" and passages > 0 and passage_led(factors[2], passages, drift)
    settle = plan if passages > 0 and (outcome == "not enough evidence" or led) else None
    j = replace(base, outcome=outcome, text_type=text, text_inferred=inferred,
                expected=expected, factors=factors, baseline_check=check, lines=tuple(lines),
                reasons=tuple(reasons), commit_check=commit, paired=by_passage,
                settle=settle, offer=settle.command() if settle else base.offer,
                confirm=how if led else "")  # fmt: skip
    return replace(j, headline=words.headline(j))


def typed_verdict(
    sweep: Sweep,
    tok_s: float,
    prompt: float,
    text_type: str | None,
    *,
    output: int | None = None,
    requests: int = 1,
    baseline: float | None = None,
    baseline_prompt: float | None = None,
    baseline_text: str | None = None,
    baseline_output: int | None = None,
    baseline_requests: int = 1,
    seed: int = 0,
    held_out: bool = True,
    windows: Sequence[str] | None = None,
    same_prompts: bool = False,
) -> Judgement:
    """The verdict on typed figures ("it was 138, now it is 32"), as `diagnose --observed`
    asks it: prompt lengths as typed, outputs (the sweep's when None), and how many
    requests each figure is the median of; `held_out` (the default): measured on the
    operator's own prompts, not the sweep's passages (`passage_spread`). On the sweep's
    passages, `windows` says which the figures read; None: as `prompt --repeat N` reads
    them, windows 0..N-1 of each figure's N requests. `same_prompts`: held out, but both
    figures read the same prompts at the same point (the operator re-sent them): paired,
    so the spread between passages cancels (`check_same_prompts`)."""
    if same_prompts:
        check_same_prompts(prompt, text_type, output, requests, baseline, baseline_prompt,
                           baseline_text, baseline_output, baseline_requests)  # fmt: skip

    def read(n: int) -> tuple[str, ...]:
        return tuple(windows) if windows is not None else tuple(str(i) for i in range(n))

    observed = Observed.typed_at(tok_s, prompt, text_type, output=output, requests=requests,
                                 held_out=held_out, windows=read(requests),
                                 same_prompts=same_prompts)  # fmt: skip
    base = typed_baseline(sweep, baseline, baseline_prompt, baseline_text,
                          output=baseline_output, requests=baseline_requests,
                          held_out=held_out, windows=read(baseline_requests),
                          same_prompts=same_prompts)  # fmt: skip
    return judge(sweep, observed, base, seed=seed)
