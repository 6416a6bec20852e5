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

from console.measure import methods
from console.measure.methods import MethodResult
from console.measure.session import MeasureSession

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


def baseline_comparison(before: MethodResult, after: MethodResult) -> list[dict[str, Any]]:
    """Per text type: tok/s, commit and step time before and after, and what moved."""
    rows = []
    after_by = {(p.text_type, p.context): p for p in after.points}
    for b in before.points:
        a = after_by.get((b.text_type, b.context))
        if a is None:
            continue
        row: dict[str, Any] = {"text_type": b.text_type, "context": b.context}
        for name, attr in (("decode_tok_s", "tok_s"), ("commit_len", "commit"),
                           ("step_time_s", "step_s")):  # fmt: skip
            bv, av = getattr(b, attr), getattr(a, attr)
            row[name] = {
                "before": bv.median if bv else None,
                "after": av.median if av else None,
                "change": (av.median / bv.median - 1) if av and bv and bv.median else None,
            }
        c, s = row["commit_len"]["change"], row["step_time_s"]["change"]
        moved = []
        if c is not None and abs(c) > MOVED:
            moved.append(f"commit {c:+.0%}")
        if s is not None and abs(s) > MOVED:
            moved.append(f"step time {s:+.0%}")
        row["moved"] = ", ".join(moved) or "neither factor moved more than 5%"
        rows.append(row)
    return rows


def comparison_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The comparison as aligned text lines (the CLI prints them, the TUI shows them)."""

    def n(v: float | None, fmt: str, scale: float = 1.0) -> str:
        return "-" if v is None else fmt.format(v * scale)

    lines = [
        f"{'text':<8}{'tok/s before':>13}{'after':>9}{'':>8}{'commit':>8}{'after':>7}"
        f"{'step ms':>9}{'after':>7}  which factor moved"
    ]
    for r in rows:
        t, c, s = r["decode_tok_s"], r["commit_len"], r["step_time_s"]
        lines.append(
            f"{r['text_type']:<8}{n(t['before'], '{:.1f}'):>13}{n(t['after'], '{:.1f}'):>9}"
            f"{n(t['change'], '{:+.0%}'):>8}{n(c['before'], '{:.2f}'):>8}"
            f"{n(c['after'], '{:.2f}'):>7}{n(s['before'], '{:.2f}', 1000):>9}"
            f"{n(s['after'], '{:.2f}', 1000):>7}  {r['moved']}"
        )
    return lines


@dataclass
class BaselineApply:
    result: ApplyResult
    before: MethodResult
    after: MethodResult | None
    rows: list[dict[str, Any]] = field(default_factory=list)


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
