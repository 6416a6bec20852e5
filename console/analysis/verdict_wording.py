"""The verdict in words: its headline and its arithmetic, a line each.

Every interval is quoted from the one `FactorRange` it belongs to (`FactorRange.text`,
`FactorRange.times`), so the headline and the arithmetic never disagree about a
residual; every context says whether it is a prompt length or a mid-decode context.
"""

from __future__ import annotations

from console.analysis.answer import far, reaches_past_wide
from console.analysis.decompose import ThroughputModel
from console.analysis.intervals import Interval
from console.analysis.settle_plan import SettlePlan
from console.analysis.thresholds import MATTERS
from console.analysis.verdict_records import FactorRange, Judgement, Observed


def change(j: Judgement) -> str:
    obs = j.observed.tok_s
    if j.baseline is None:
        return f"{obs:.1f} tok/s"
    return f"{j.baseline.tok_s:.1f} -> {obs:.1f} tok/s ({obs / j.baseline.tok_s - 1:+.0%})"


def headline(j: Judgement, matters: float = MATTERS) -> str:
    residual = j.factor("residual")
    assert residual is not None
    if j.outcome == "not enough evidence":
        return f"Not enough evidence: {j.reasons[0]}."
    commit = j.commit_check
    if j.outcome == "not physics" and (residual.ratio.contains(1.0) or not far(
            residual.ratio.value, matters)) and commit is not None:  # fmt: skip
        return (
            f"Not physics: at {change(j)} the commit length is {commit.text()} off what context "
            "and text explain (tok/s residual "
            f"{residual.text()}): the drafter or a flag changed; worth a bug hunt."
        )
    if j.outcome == "not physics" and j.confirm:
        return (
            f"Not physics: {change(j)} is {residual.text()} off what context and text "
            "explain, but most of that interval is how far passages of a text differ: "
            f"confirm it on the same passages before a bug hunt ({j.confirm})."
        )
    if j.outcome == "not physics":
        return (
            f"Not physics: {change(j)} is {residual.text()} off what context and text "
            "explain; worth a bug hunt (a flag, the drafter, the host, the measurement)."
        )
    parts = []
    for name in ("context", "text"):
        f = j.factor(name)
        if f is not None:
            parts.append(f"{name} {f.times()}{factor_state(f)}")
    wide = ""
    if reaches_past_wide(residual.ratio):  # physics because the factors explain far more
        wide = " (too wide to rule out a smaller bug; the factors explain far more than it)"
    return f"Physics: {change(j)} = {' and '.join(parts)}; residual {residual.text()}{wide}."


def factor_state(f: FactorRange) -> str:
    """A factor's word in the headline: "moved" beyond the size that matters, "small"
    when its interval excludes 1 but it moved less than that (real, too small to explain
    much), "did not move" when its interval holds 1; none for an exact factor."""
    if f.exact:
        return ""
    if f.moved:
        return " (moved)"
    if not f.zero_width and not f.ratio.contains(1.0):
        return " (small)"
    return " (did not move)"


def factor_line(f: FactorRange) -> str:
    return f"{f.name}: {f.detail}: tok/s {f.times()}"


def residual_line(expected: Interval, residual: FactorRange) -> str:
    return f"expected {expected.text('{:.1f}')} tok/s; residual {residual.text()}"


def arithmetic(
    model: ThroughputModel,
    observed: Observed,
    baseline: Observed | None,
    kind: str,
    b_ctx: float,
    b_kind: str,
    factors: tuple[FactorRange, ...],
    expected: Interval,
) -> list[str]:
    ctx = observed.context
    predicted = model.predict(ctx, kind)
    lines = [
        f"model at context {ctx:.0f} (mid-decode), {kind}: commit {model.commit_at(kind, ctx):.2f} "
        f"/ step {model.step_at(ctx, kind) * 1000:.3g} ms = {predicted:.1f} tok/s",
    ] + figure_lines(observed, baseline, b_kind)
    if baseline is None:
        lines.append(f"no baseline: the model's {model.predict(b_ctx, b_kind):.1f} tok/s at "
                     f"mid-decode context {b_ctx:.0f} ({b_kind}) stands in for it")  # fmt: skip
    lines += [factor_line(f) for f in factors[:2]]
    lines.append(residual_line(expected, factors[2]))
    if observed.commit is not None and observed.step_s is not None:
        c, s = model.commit_at(kind, ctx), model.step_at(ctx, kind)
        lines.append(f"measured: commit {observed.commit:.2f} ({observed.commit / c - 1:+.0%} vs "
                     f"model), step {observed.step_s * 1000:.3g} ms ({observed.step_s / s - 1:+.0%}"
                     " vs model)")  # fmt: skip
    return lines + noise_lines(observed, baseline) + [f"note: {n}" for n in model.notes]


def figure_lines(
    observed: Observed, baseline: Observed | None, baseline_kind: str | None = None
) -> list[str]:
    """The figures asked about, with where each was taken and what it rests on: a
    refusal names them too, so the operator sees how a typed context was read."""
    lines = [f"observed: {observed.tok_s:.1f} tok/s at {observed.where()} ({rests_on(observed)})"]
    if baseline is not None:
        kind = f", {baseline_kind}" if baseline_kind else ""
        lines.append(f"baseline: {baseline.tok_s:.1f} tok/s at {baseline.where()}{kind} "
                     f"({rests_on(baseline)})")  # fmt: skip
    return lines


def noise_lines(observed: Observed, baseline: Observed | None) -> list[str]:
    """The host's noise each typed figure carries, and where that noise was measured."""
    return [f"{name} ({rests_on(figure)}) carries this host's noise: {figure.noise.text()}"
            for name, figure in (("observed", observed), ("baseline", baseline))
            if figure is not None and figure.noise is not None]  # fmt: skip


def rests_on(o: Observed) -> str:
    if o.n == 0:
        many = f"the median of {o.typed_requests} requests" if o.typed_requests > 1 else (
            "one request")  # fmt: skip
        return f"typed, taken as {many}"
    what = "request" if o.requests else "live sample"
    if o.n == 1:
        return f"one {what}, nothing to resample"
    return f"{o.n} {what}s, resampled"


PAIRED_LINE = ("paired by passage: the figures read the sweep's passages, so intervals "
               "resample timing within each passage")  # fmt: skip
SAME_PROMPTS_LINE = (
    "paired by prompt: both typed figures read the same prompts at the same point "
    "(--passages same), so the spread between passages cancels; intervals hold timing "
    "noise and the host's drift between the two"
)


def confirm_how(plan: SettlePlan | None, observed: Observed, baseline: Observed | None) -> str:
    """How to read the figures on the same passages, as the advice names it: the settling
    run where there is one; at one point, the baseline's own prompts again (measuring the
    point twice now would say nothing about what changed since the baseline)."""
    if plan is not None:
        return f"`{plan.command()}`"
    if baseline is not None and observed.at_same_point(baseline):
        return (
            "send the baseline's own prompts again and read the pair with --passages "
            "same; for a flag change, `set --baseline` reads both on the same passages"
        )
    return ""


def held_out(observed: Observed, baseline: Observed | None) -> bool:
    """Whether a figure carries the passage term (typed, on the operator's own prompts)."""
    return any(f is not None and f.passages is not None for f in (observed, baseline))


def held_out_line(observed: Observed, baseline: Observed | None) -> str:
    spreads = {f.passages.text_type: f.passages for f in (observed, baseline)
               if f is not None and f.passages is not None}  # fmt: skip
    said = "; ".join(p.text() for p in spreads.values())
    return (
        "typed figures are read as your own traffic, on passages the sweep never read: "
        f"every interval holds the spread between passages of a text ({said}), which "
        "more requests at one point do not remove; the sweep is resampled within its "
        "passages (--passages sweep reads the figures as the sweep's own prompts)"
    )
