"""The tuning loop: the same short fixed baseline before and after a flag change.

An operator who changes the draft window or the tree budget wants to know what it did to
decode throughput, and which factor moved: commit length (the drafter and tree) or step
time (the work per round). `apply_with_baseline` runs a fixed baseline, applies the
change (restart, follow to ready), runs the same baseline again, and lines the two up.
`specconsole set --baseline` and the TUI's apply both call it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.config import BaselineProfile
from console.measure import format as fmt
from console.measure import methods
from console.measure.comparison import FigurePair
from console.measure.methods import MethodResult
from console.measure.session import MeasureError, MeasureSession
from console.measure.stats import PointSummary

if TYPE_CHECKING:
    from console.service import ApplyResult, EngineService, FlagPlan
    from console.store import RunStore

# The defaults a host profile's `[baseline]` table overrides (console/config.py): a short
# context, and a long one at `long_fraction` of the engine's context length, since a change
# that matters at long context (a draft window, a context length) cannot show at 256.
BASELINE = {"context": 256, "max_tokens": 96, "text_types": ("code", "prose"), "repeat": 3,
            "long_fraction": 0.9}  # fmt: skip
MOVED = 0.05  # a factor that changed by more than 5% moved


@dataclass(frozen=True)
class BaselinePlan:
    """The points a baseline measures: prompt lengths, output length, text types, repeats."""

    contexts: tuple[int, ...]
    output: int
    text_types: tuple[str, ...]
    repeat: int
    notes: tuple[str, ...] = ()  # what was clamped to fit the engine

    def as_dict(self) -> dict[str, Any]:
        return {"contexts": list(self.contexts), "output": self.output,
                "text_types": list(self.text_types), "repeat": self.repeat}  # fmt: skip


def default_contexts(context_limit: int | None, output: int) -> list[int]:
    """256 and ~90% of the context length (rounded down to 64), or 256 alone when the
    engine does not say its context length."""
    short = int(BASELINE["context"])
    if context_limit is None:
        return [short]
    long = int(context_limit * float(BASELINE["long_fraction"])) // 64 * 64
    return sorted({short, long})


def baseline_plan(
    profile: BaselineProfile | None,
    context_limit: int | None,
    *,
    contexts: Sequence[int] | None = None,
    output: int | None = None,
    text_types: Sequence[str] | None = None,
) -> BaselinePlan:
    """The profile's baseline with this run's overrides, every context clamped so that it
    and the output fit the engine's context length (said in `notes`)."""
    profile = profile or BaselineProfile()
    out = output or profile.output
    wanted = list(contexts or profile.contexts or default_contexts(context_limit, out))
    notes = []
    if context_limit is not None:
        room = context_limit - out
        if room < 1:
            raise MeasureError(
                f"A baseline output of {out} tokens leaves no room for a prompt in the "
                f"engine's context length {context_limit}; use a smaller --baseline-output."
            )
        for c in [c for c in wanted if c > room]:
            notes.append(f"context {c} clamped to {room} ({out} output tokens must fit "
                         f"in {context_limit})")  # fmt: skip
        wanted = [min(c, room) for c in wanted]
    return BaselinePlan(
        contexts=tuple(sorted(set(wanted))),
        output=out,
        text_types=tuple(text_types or profile.text_types),
        repeat=profile.repeat,
        notes=tuple(notes),
    )


async def plan_for(session: MeasureSession, **overrides: Any) -> BaselinePlan:
    """The baseline plan for this session's host profile and engine, with overrides."""
    facts = await session.facts()
    return baseline_plan(session.service.profile.baseline, facts.context_limit, **overrides)


async def run_baseline(session: MeasureSession, plan: BaselinePlan | None = None) -> MethodResult:
    """A short baseline, the same points before and after a change, stored as kind
    "baseline" so it is never taken for the sweep a verdict's model is fitted from."""
    plan = plan or await plan_for(session)
    with session.labelled("baseline"):
        return await methods.context_sweep(
            session,
            contexts=list(plan.contexts),
            output_tokens=plan.output,
            text_types=list(plan.text_types),
            repeat=plan.repeat,
        )


@dataclass(frozen=True)
class BaselineRow:
    """One text type's baseline point before and after the change: each figure's median
    on both sides (`FigurePair`: a = before, b = after) and which factor moved."""

    text_type: str
    context: int
    decode_tok_s: FigurePair
    commit_len: FigurePair
    step_time_s: FigurePair

    @property
    def moved(self) -> str:
        """The factors that moved more than `MOVED`, or a sentence saying none did."""
        moved = []
        for label, pair in (("commit", self.commit_len), ("step time", self.step_time_s)):
            change = pair.change
            if change is not None and abs(change.fraction) > MOVED:
                moved.append(f"{label} {change.fraction:+.0%}")
        return ", ".join(moved) or "neither factor moved more than 5%"

    def as_dict(self) -> dict[str, Any]:
        def side(pair: FigurePair) -> dict[str, float | None]:
            fraction = pair.change.fraction if pair.change else None
            return {"before": pair.a, "after": pair.b, "change": fraction}

        return {
            "text_type": self.text_type,
            "context": self.context,
            "decode_tok_s": side(self.decode_tok_s),
            "commit_len": side(self.commit_len),
            "step_time_s": side(self.step_time_s),
            "moved": self.moved,
        }


def baseline_comparison(before: MethodResult, after: MethodResult) -> list[BaselineRow]:
    """Per text type: tok/s, commit and step time before and after, and what moved."""
    rows = []
    after_by = {(p.text_type, p.context): p for p in after.points}
    for b in before.points:
        a = after_by.get((b.text_type, b.context))
        if a is None:
            continue

        def pair(name: str, attr: str, b: PointSummary = b, a: PointSummary = a) -> FigurePair:
            bv, av = getattr(b, attr), getattr(a, attr)
            return FigurePair(name, bv.median if bv else None, av.median if av else None)

        rows.append(
            BaselineRow(
                text_type=b.text_type,
                context=b.context,
                decode_tok_s=pair("decode_tok_s", "tok_s"),
                commit_len=pair("commit_len", "commit"),
                step_time_s=pair("step_time_s", "step_s"),
            )
        )
    return rows


def comparison_lines(rows: list[BaselineRow]) -> list[str]:
    """The comparison as aligned text lines (the CLI prints them, the TUI shows them)."""
    lines = [
        f"{'text':<8}{'tok/s before':>13}{'after':>9}{'':>8}{'commit':>8}{'after':>7}"
        f"{'step ms':>9}{'after':>7}  which factor moved"
    ]
    for r in rows:
        t, c, s = r.decode_tok_s, r.commit_len, r.step_time_s
        lines.append(
            f"{r.text_type:<8}{fmt.tok_s(t.a):>13}{fmt.tok_s(t.b):>9}"
            f"{fmt.ratio_change(t.change.ratio if t.change else None):>8}"
            f"{fmt.commit(c.a):>8}{fmt.commit(c.b):>7}"
            f"{fmt.step_ms(s.a):>9}{fmt.step_ms(s.b):>7}  {r.moved}"
        )
    return lines


@dataclass
class BaselineApply:
    result: ApplyResult
    before: MethodResult
    after: MethodResult | None
    rows: list[BaselineRow] = field(default_factory=list)


async def apply_with_baseline(
    service: EngineService,
    plan: FlagPlan,
    *,
    timeout: float,
    store: RunStore | None = None,
    on_note: Callable[[str], None] | None = None,
    baseline: BaselinePlan | None = None,
    overrides: dict[str, Any] | None = None,
) -> BaselineApply:
    """Baseline, apply (restart and follow to ready), baseline again; compare. The points
    (`baseline`, or the profile's `[baseline]` with `overrides`: contexts, output,
    text_types) are fixed before the change, so both sides measure the same ones."""
    session = MeasureSession(service, store=store, on_note=on_note)
    points = baseline or await plan_for(session, **(overrides or {}))
    if on_note:
        for note in points.notes:
            on_note(f"baseline: {note}")
        contexts = ",".join(str(c) for c in points.contexts)
        on_note(f"baseline before the change (contexts {contexts}, {points.output} tokens, "
                f"{','.join(points.text_types)}, x{points.repeat}) ...")  # fmt: skip
    before = await run_baseline(session, points)
    result = await service.apply(plan, timeout=timeout)
    if not result.ok:
        return BaselineApply(result, before, None)
    if on_note:
        on_note("baseline after the change ...")
    after = await run_baseline(session, points)
    return BaselineApply(result, before, after, baseline_comparison(before, after))
