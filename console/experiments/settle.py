"""Settle a typed verdict: both points measured on the same passages, then the typed
figures read against what the engine measured at their points.

Run when the passage term left a typed verdict open (`analysis/settle_plan.py`): the
plan's points are swept on the same passages (each read twice), the measured points are
judged paired by passage (context and text factors with narrow intervals; the passage
spread cancels), and each typed figure is compared with its measured point with the
passage term in (the operator's prompts are not the settling passages). A typed figure
far outside that band is not explained by context or text: the engine measured here does
not produce it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from console.analysis.answer import changed
from console.analysis.intervals import ChangeInterval
from console.analysis.sample_size import SampleTarget
from console.analysis.settle_plan import SettlePlan, TypedFigure
from console.analysis.thresholds import CHECK_LEVEL
from console.analysis.typed_noise import NoiseProfile
from console.analysis.verdict import Judgement, Observed, Sweep, judge, with_host_noise
from console.analysis.verdict_records import FactorRange
from console.analysis.verdict_split import interval
from console.measure import methods
from console.measure.methods import Tick
from console.measure.session import MeasureSession

DRAWS = 2000
# Each typed figure is read against its point at 99%: two such checks a settle, each able
# to turn a physics answer into "not physics", so each keeps its false alarms to about 1%
# (the comparison protocol's family level), not the 5% of one 95% interval.


@dataclass(frozen=True)
class Settled:
    """The settling run: the verdict on the measured points and each typed figure's
    place against its measured point."""

    plan: SettlePlan
    run_id: int | None
    verdict: Judgement
    checks: tuple[FactorRange, ...]

    def text(self) -> str:
        lines = [self.verdict.text()]
        lines += [f"  {c.name}: {c.detail}: x{c.ratio.value:.2f} [{c.ratio.low:.2f}–"
                  f"{c.ratio.high:.2f}] ({ChangeInterval(c.ratio).text()})"
                  for c in self.checks]  # fmt: skip
        lines.append(f"(settling run {self.run_id}: {len(self.plan.prompts)} prompts x "
                     f"{', '.join(self.plan.text_types)} on {self.plan.passages} passages "
                     f"read {self.plan.reads} times each)")  # fmt: skip
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"plan": self.plan.as_dict(), "run_id": self.run_id,
                "verdict": self.verdict.as_dict(),
                "typed_vs_measured": [c.as_dict() for c in self.checks]}  # fmt: skip


def settle_target(plan: SettlePlan) -> SampleTarget:
    """Exactly `reads` rounds over `passages` passages at every point."""
    n = plan.passages * plan.reads
    return SampleTarget(target_rel=0.0, min_repeat=n, max_repeat=n, passages=plan.passages)


async def settle(
    session: MeasureSession,
    plan: SettlePlan,
    *,
    profile: NoiseProfile | None = None,
    limit: int | None = None,
    tick: Tick | None = None,
) -> Settled:
    """Run the plan on the engine and judge it (see the module docstring)."""
    result = await methods.context_sweep(
        session, contexts=list(plan.prompts), output_tokens=plan.output,
        text_types=list(plan.text_types), target=settle_target(plan), tick=tick,
    )  # fmt: skip
    sweep = Sweep(tuple(result.samples), session.service.profile.name, limit,
                  f"settling run {result.run_id}", profile)  # fmt: skip
    return judge_settled(plan, sweep, result.run_id)


def judge_settled(plan: SettlePlan, sweep: Sweep, run_id: int | None = None) -> Settled:
    """The verdict on a settling sweep's measured points, and the typed figures against
    them (pure: the CLI, the TUI and the tests call it on the same samples)."""
    measured = {f: _measured(sweep, f) for f in (plan.observed, plan.baseline) if f is not None}
    observed = measured[plan.observed]
    baseline = measured.get(plan.baseline) if plan.baseline is not None else None
    verdict = judge(sweep, observed, baseline)
    checks = tuple(_typed_check(sweep, f, measured[f], name)
                   for f, name in ((plan.observed, "observed"), (plan.baseline, "baseline"))
                   if f is not None)  # fmt: skip
    off = [c for c in checks if changed(c.ratio)]  # the one "not physics" (`answer`)
    if off:
        c = off[0]
        verdict = replace(
            verdict, outcome="not physics",
            headline=(f"Not physics: your {c.detail}, {ChangeInterval(c.ratio).text()} off "
                      "what this engine measures there on passages of that text; context "
                      "and text do not explain it (the host, the load, the measurement)."),
        )  # fmt: skip
    return Settled(plan, run_id, verdict, checks)


def _measured(sweep: Sweep, figure: TypedFigure) -> Observed:
    at = [s for s in sweep.fitted
          if s.text_type == figure.text_type and s.context_tokens == figure.prompt]  # fmt: skip
    return Observed.from_requests(at, figure.text_type, source="settling run")


def _typed_check(sweep: Sweep, figure: TypedFigure, measured: Observed, name: str) -> FactorRange:
    """The typed figure over its measured point, with the typed figure's timing noise,
    the host's drift and the passage term (its prompts are not the settling passages)."""
    typed = Observed.typed_at(figure.tok_s, figure.prompt, figure.text_type,
                              output=figure.output, requests=figure.requests)  # fmt: skip
    typed = with_host_noise(sweep, typed)
    rng = random.Random(0)
    ratios = []
    for _ in range(DRAWS):
        t, _c = typed.resample(rng)
        m, _c = measured.resample(rng, by_passage=True)
        ratios.append(t / m)
    where = f"{figure.tok_s:g} tok/s on {figure.text_type} at prompt {figure.prompt}"
    point = figure.tok_s / measured.tok_s
    return FactorRange(f"{name} vs measured", interval(point, ratios, CHECK_LEVEL),
                       f"{name} {where} against the measured {measured.tok_s:.1f} tok/s "
                       f"({measured.n} requests)")  # fmt: skip
