"""The tuning loop: the same short fixed baseline before and after a flag change.

An operator who changes the draft window or the tree budget wants to know what it did to
decode throughput, and which factor moved: commit length (the drafter and tree) or step
time (the work per round). `apply_with_baseline` runs a fixed baseline, applies the
change (restart, follow to ready), runs the same baseline again, and lines the two up.
`specconsole set --baseline` and the TUI's apply both call it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.measure import format as fmt
from console.measure import methods
from console.measure.comparison import FigurePair
from console.measure.methods import MethodResult
from console.measure.session import MeasureSession
from console.measure.stats import PointSummary

if TYPE_CHECKING:
    from console.service import ApplyResult, EngineService, FlagPlan
    from console.store import RunStore

BASELINE = {"context": 256, "max_tokens": 96, "text_types": ("code", "prose"), "repeat": 3}
MOVED = 0.05  # a factor that changed by more than 5% moved


async def run_baseline(session: MeasureSession) -> MethodResult:
    """A short fixed baseline: the same points before and after a change."""
    return await methods.context_sweep(
        session,
        contexts=[BASELINE["context"]],
        output_tokens=BASELINE["max_tokens"],
        text_types=BASELINE["text_types"],
        repeat=BASELINE["repeat"],
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
) -> BaselineApply:
    """Baseline, apply (restart and follow to ready), baseline again; compare."""
    session = MeasureSession(service, store=store, on_note=on_note)
    if on_note:
        on_note("baseline before the change ...")
    before = await run_baseline(session)
    result = await service.apply(plan, timeout=timeout)
    if not result.ok:
        return BaselineApply(result, before, None)
    if on_note:
        on_note("baseline after the change ...")
    after = await run_baseline(session)
    return BaselineApply(result, before, after, baseline_comparison(before, after))
