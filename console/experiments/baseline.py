"""The tuning loop: the same short fixed baseline before and after a flag change.

An operator who changes the draft window or the tree budget wants to know what it did to
decode throughput, and which factor moved: commit length (the drafter and tree) or step
time (the work per round). `apply_with_baseline` runs a fixed baseline, applies the
change (restart, follow to ready), runs the same baseline again, and lines the two up.
`specconsole set --baseline` and the TUI's apply both call it.

Every figure is pooled over each side's requests (sum of tokens / sum of steps / sum of
decode time), so tok/s = commit / step on every row, and carries a bootstrap interval;
each change carries the interval of its ratio, and only a change whose interval excludes
"no change" is a finding (`measure.intervals`). Each side repeats until its points' tok/s
intervals are within the target (`measure.sample_size`), and the after side reads at
least the passages the before side read, so the two pair up prompt by prompt.

The order in time, and what it costs:
  A-B (default)    the before block, the restart, the after block. Within each block the
                   text types and contexts take turns, so drift inside a block spreads
                   over its points; drift between the blocks (minutes apart) does not
                   cancel and reads as a change. One restart, the one the change needs.
  A-B-A-B (bracket) half the before block, the restart into B, the after block, back to
                   A through the last-good config (a rollback), the other half of A, and
                   B again. A's requests sit on both sides of B's in time, so a drift
                   that is linear over the run cancels in A / B. Two extra restarts (on
                   a big model, minutes each); the flags end as asked, with A as last-good.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.analysis import format as fmt
from console.analysis.comparison import FigurePair, pooled_pairs
from console.analysis.records import RequestSample
from console.analysis.sample_size import SampleTarget
from console.config import BaselineProfile
from console.measure import methods
from console.measure.methods import MethodResult
from console.measure.session import MeasureError, MeasureSession

if TYPE_CHECKING:
    from console.service import ApplyResult, EngineService, FlagPlan
    from console.store import RunStore

# The defaults a host profile's `[baseline]` table overrides (console/config.py): a short
# context, and a long one at `long_fraction` of the engine's context length, since a change
# that matters at long context (a draft window, a context length) cannot show at 256.
BASELINE = {"context": 256, "max_tokens": 96, "text_types": ("code", "prose"), "repeat": 3,
            "long_fraction": 0.9}  # fmt: skip


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


async def run_baseline(
    session: MeasureSession,
    plan: BaselinePlan | None = None,
    *,
    target: SampleTarget | None = None,
    prior: Sequence[RequestSample] = (),
    first_index: int = 0,
    min_rounds: int | None = None,
) -> MethodResult:
    """The baseline's points (`plan`, else the profile's), the same before and after a
    change; with `target`, repeated until each point's tok/s interval is narrow enough
    (see `context_sweep`). Stored as kind "baseline", so it is never taken for the sweep
    a verdict's model is fitted from."""
    plan = plan or await plan_for(session)
    with session.labelled("baseline"):
        return await methods.context_sweep(
            session,
            contexts=list(plan.contexts),
            output_tokens=plan.output,
            text_types=list(plan.text_types),
            repeat=plan.repeat,
            target=target,
            prior=prior,
            first_index=first_index,
            min_rounds=min_rounds,
        )


@dataclass(frozen=True)
class BaselineRow:
    """One baseline point (text type, context) before and after the change: each figure
    pooled on both sides with its interval, and the interval of its change
    (`FigurePair`: a = before, b = after)."""

    text_type: str
    context: int
    decode_tok_s: FigurePair
    commit_len: FigurePair
    step_time_s: FigurePair
    n_before: int = 0
    n_after: int = 0

    @property
    def factors(self) -> list[tuple[str, FigurePair]]:
        """The factors whose change is a finding (its interval excludes no change)."""
        pairs = (("commit", self.commit_len), ("step time", self.step_time_s))
        return [(label, pair) for label, pair in pairs if pair.finding]

    @property
    def moved(self) -> str:
        """The factors whose change is a finding, with their intervals, or a sentence
        saying none is."""
        found = [f"{label} {pair.change_text()}" for label, pair in self.factors]
        return ", ".join(found) or "neither factor moved beyond noise"

    def as_dict(self) -> dict[str, Any]:
        def side(pair: FigurePair) -> dict[str, Any]:
            fraction = pair.change.fraction if pair.change else None
            iv = pair.a_interval, pair.b_interval
            return {
                "before": pair.a,
                "after": pair.b,
                "change": fraction,
                "before_interval": iv[0].as_dict() if iv[0] else None,
                "after_interval": iv[1].as_dict() if iv[1] else None,
                "change_interval": pair.moved.as_dict() if pair.moved else None,
            }

        return {
            "text_type": self.text_type,
            "context": self.context,
            "n_before": self.n_before,
            "n_after": self.n_after,
            "decode_tok_s": side(self.decode_tok_s),
            "commit_len": side(self.commit_len),
            "step_time_s": side(self.step_time_s),
            "moved": self.moved,
            "factors_moved": [label for label, _ in self.factors],
            "pooled": True,
        }


def compare_samples(
    before: Sequence[RequestSample], after: Sequence[RequestSample], *, seed: int = 0
) -> list[BaselineRow]:
    """Per (text type, context) measured on both sides: the pooled figures and changes."""
    groups: dict[tuple[str, int], tuple[list[RequestSample], list[RequestSample]]] = {}
    for index, samples in enumerate((before, after)):
        for s in samples:
            groups.setdefault((s.text_type, s.context_tokens), ([], []))[index].append(s)
    rows = []
    for (text_type, context), (b, a) in sorted(groups.items()):
        if not b or not a:
            continue
        pairs = pooled_pairs(b, a, seed=seed)
        rows.append(
            BaselineRow(
                text_type=text_type,
                context=context,
                decode_tok_s=pairs["decode_tok_s"],
                commit_len=pairs["commit_len"],
                step_time_s=pairs["step_time_s"],
                n_before=sum(1 for s in b if s.ok),
                n_after=sum(1 for s in a if s.ok),
            )
        )
    return rows


def baseline_comparison(
    before: MethodResult, after: MethodResult, *also_before: MethodResult
) -> list[BaselineRow]:
    """Per text type: tok/s, commit and step time before and after, and what moved.
    `also_before`: further blocks of the before condition (a bracket's second half)."""
    samples = list(before.samples) + [s for r in also_before for s in r.samples]
    return compare_samples(samples, after.samples)


HEADERS = ("text", "context", "figure", "before", "after", "change", "n", "which factor moved")


def comparison_lines(rows: list[BaselineRow]) -> list[str]:
    """The comparison as aligned text lines (the CLI prints them, the TUI shows them):
    per point a row each for tok/s, commit and step time, pooled with [95% interval]."""
    table_rows = []
    for r in rows:
        figures = (
            ("tok/s", r.decode_tok_s, fmt.TOK_S),
            ("commit", r.commit_len, fmt.COMMIT),
            ("step ms", r.step_time_s, fmt.STEP_MS),
        )
        for i, (label, pair, figure) in enumerate(figures):
            first = i == 0
            table_rows.append(
                (
                    r.text_type if first else "",
                    str(r.context) if first else "",
                    label,
                    fmt.interval(pair.a_interval, figure),
                    fmt.interval(pair.b_interval, figure),
                    pair.change_text(),
                    f"{r.n_before}/{r.n_after}" if first else "",
                    r.moved if first else "",
                )
            )
    lines = fmt.table(HEADERS, table_rows, right={1, 6}).splitlines()
    lines.append(
        "  pooled per side (tokens / steps / decode time) [95% interval]; a change is a "
        "finding only when its interval excludes no change"
    )
    return lines


@dataclass
class BaselineApply:
    """A change applied between baselines. `before_again` is the bracket's second half
    of the before condition (None without `--bracket`)."""

    result: ApplyResult
    before: MethodResult
    after: MethodResult | None
    rows: list[BaselineRow] = field(default_factory=list)
    before_again: MethodResult | None = None
    order: str = "A-B"
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The comparison, the order it was measured in, and any note on sample size."""
        if not self.rows:
            return list(self.notes)
        order = (
            "measured A-B-A-B: half the before requests on each side of the after ones"
            if self.order == "A-B-A-B"
            else "measured A-B: the before block, the restart, the after block"
        )
        return [*comparison_lines(self.rows), f"  {order}", *(f"  {n}" for n in self.notes)]

    def as_dict(self) -> dict[str, Any]:
        def run_id(r: MethodResult | None) -> int | None:
            return r.run_id if r else None

        return {
            "ok": self.result.ok,
            "order": self.order,
            "runs": {
                "before": run_id(self.before),
                "after": run_id(self.after),
                "before_again": run_id(self.before_again),
            },
            "rows": [r.as_dict() for r in self.rows],
            "sample_size": {
                side: r.figures.get("sample_size")
                for side, r in (
                    ("before", self.before),
                    ("after", self.after),
                    ("before_again", self.before_again),
                )
                if r is not None
            },
            "notes": list(self.notes),
        }


def _rounds(result: MethodResult) -> int:
    """The most rounds any point of this block took."""
    points = (result.figures.get("sample_size") or {}).get("points") or []
    return max((p["rounds"] for p in points), default=0)


def _noise_notes(**blocks: MethodResult | None) -> list[str]:
    """The sample-size sentence of each block that did not reach the target, by side."""
    notes = []
    for side, r in blocks.items():
        message = r and (r.figures.get("sample_size") or {}).get("message")
        if message:
            notes.append(f"{side.replace('_', ' ')}: {message}")
    return notes


async def apply_with_baseline(
    service: EngineService,
    plan: FlagPlan,
    *,
    timeout: float,
    store: RunStore | None = None,
    on_note: Callable[[str], None] | None = None,
    target: SampleTarget | None = None,
    bracket: bool = False,
    baseline: BaselinePlan | None = None,
    overrides: dict[str, Any] | None = None,
) -> BaselineApply:
    """Baseline, apply (restart and follow to ready), baseline again; compare. With
    `bracket`, A-B-A-B as the module says. `target` defaults to `SampleTarget()`. The
    points (`baseline`, or the profile's `[baseline]` with `overrides`: contexts, output,
    text_types) are fixed before the change, so both sides measure the same ones."""
    target = target or SampleTarget()
    session = MeasureSession(service, store=store, on_note=on_note)
    points = baseline or await plan_for(session, **(overrides or {}))
    for note in points.notes:
        session.note(f"baseline: {note}")
    if bracket:
        return await _bracketed(session, service, plan, points, timeout=timeout, target=target)

    contexts = ",".join(str(c) for c in points.contexts)
    session.note(f"baseline before the change (contexts {contexts}, {points.output} tokens, "
                 f"{','.join(points.text_types)}) ...")  # fmt: skip
    before = await run_baseline(session, points, target=target)
    result = await service.apply(plan, timeout=timeout)
    if not result.ok:
        return BaselineApply(result, before, None)
    session.note("baseline after the change ...")
    # At least the rounds the before block took: the same passages on both sides.
    after = await run_baseline(session, points, target=target, min_rounds=_rounds(before) or None)
    return BaselineApply(
        result, before, after, baseline_comparison(before, after),
        notes=_noise_notes(before=before, after=after),
    )  # fmt: skip


async def _bracketed(
    session: MeasureSession,
    service: EngineService,
    plan: FlagPlan,
    points: BaselinePlan,
    *,
    timeout: float,
    target: SampleTarget,
) -> BaselineApply:
    """A (half), apply B, B, roll back to A (last-good), A (the rest), apply B again."""
    half = math.ceil(target.max_repeat / 2)
    first = dataclasses.replace(target, max_repeat=half, min_repeat=min(target.min_repeat, half))
    session.note("baseline before the change, first half ...")
    before = await run_baseline(session, points, target=first)
    k = _rounds(before)
    result = await service.apply(plan, timeout=timeout)
    if not result.ok:
        return BaselineApply(result, before, None, order="A-B-A-B")
    session.note("baseline after the change ...")
    after = await run_baseline(
        session, points, target=target, min_rounds=min(2 * k, target.max_repeat)
    )
    m = _rounds(after)
    session.note("back to the flags before the change (last-good) for the second half ...")
    back = await service.rollback(timeout=timeout)
    before_again = None
    if back.ok:
        rest = max(1, m - k)
        second = dataclasses.replace(
            target, max_repeat=max(target.max_repeat - k, rest), min_repeat=rest
        )
        before_again = await run_baseline(
            session, points, target=second, prior=before.samples, first_index=k
        )
    else:
        session.note(f"the flags before the change did not come back ({back.event.describe()})")
    session.note("applying the change again ...")
    result = await service.apply(plan, timeout=timeout)
    extra = (before_again,) if before_again is not None else ()
    rows = baseline_comparison(before, after, *extra) if result.ok else []
    return BaselineApply(
        result, before, after, rows, before_again=before_again, order="A-B-A-B",
        notes=_noise_notes(before=before, after=after, before_again=before_again),
    )  # fmt: skip
