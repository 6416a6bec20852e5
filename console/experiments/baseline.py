"""The tuning loop: the same short fixed baseline before and after a flag change.

An operator who changes the draft window or the tree budget wants to know what it did to
decode throughput, and which factor moved: commit length (the drafter and tree) or step
time (the work per round). `apply_with_baseline` measures the baseline's points on both
configurations, applies the change, and lines the two up (`baseline_rows`).
`specconsole set --baseline` and the TUI's apply both call it.

Both sides go through the one comparison protocol (`analysis.pairing`): whole rounds of
every passage of every point (`analysis.sample_size`), the after side exactly the rounds
of the same passages the before side read, balanced and paired by passage, so commit is
exact under greedy decoding and every interval holds timing noise plus, across a restart,
the host's measured drift (`experiments.calibrate`: measured first when the host has no
noise profile, and said so).

The order in time (`order`; "auto" picks the first that applies):
  side by side     B as a second engine process with the new flags beside A, every
                   request on A followed by the same one on B; drift cancels in each pair.
                   Where the host holds both (the bundled engine on this machine); then
                   the change is applied to the service (one restart).
  A-B-A-B          half the before rounds, the restart into B, B's rounds, back to A
                   through the last-good config, the other half of A, and B again. A
                   drift linear in time cancels; three quarters of A-B's drift variance
                   is left (in the interval). The default when the measured restart is
                   under a minute; two extra restarts.
  A-B              the before block, the restart, the after block: the whole measured
                   block-to-block drift is in every time interval. One restart.

Across a restart (A-B, A-B-A-B) a comparison may read on, so its first reading is the
first look of a group-sequential test (`analysis.sequential`, `baseline_confirm`): a
change is a finding there only beyond that look's share of the 1%. A step time that
moved beyond timing noise with commit unmoved is what a slow spell of the host fakes, so
it is measured again before anything is reported: back to A for one more block of it, B
again for one more of B, a third block of a side whose two disagree; the drift term then
holds the calibration's calm blocks and the shifts between each side's own blocks. Where
the measured restart is cheap, a first reading too wide to tell on every row is read
again the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.analysis.noise_profile import Drift, NoiseProfile
from console.analysis.sample_size import SampleTarget
from console.experiments.baseline_block import (
    BASELINE,
    BaselinePlan,
    baseline_plan,
    default_contexts,
    noise_notes,
    plan_for,
    rounds_by_point,
    run_baseline,
)
from console.experiments.baseline_confirm import confirm, first_look, worth_reading_again
from console.experiments.baseline_rows import (
    COMPARISON_NOTE,
    HEADERS,
    BaselineRow,
    baseline_comparison,
    compare_samples,
    comparison_lines,
    comparison_table,
)
from console.experiments.calibrate import noise_for
from console.experiments.side_by_side import can_run_side_by_side, side_by_side
from console.measure.methods import MethodResult
from console.measure.session import MeasureError, MeasureSession

if TYPE_CHECKING:
    from console.service import ApplyResult, EngineService, FlagPlan
    from console.store import RunStore

# The rows live in `baseline_rows`, a block in `baseline_block`; their names stay
# importable from here.
__all__ = ["BASELINE", "HEADERS", "BaselineApply", "BaselinePlan", "BaselineRow",
           "apply_with_baseline", "available_orders", "baseline_comparison", "baseline_plan",
           "choose_order", "compare_samples", "comparison_lines", "default_contexts",
           "plan_for", "rounds_by_point", "run_baseline"]  # fmt: skip


@dataclass
class BaselineApply:
    """A change applied between baselines. `before_again` is the bracket's second half
    of the before condition (None unless the order is A-B-A-B); `drift` the drift term
    every time interval carries, with the order it was measured in."""

    result: ApplyResult
    before: MethodResult
    after: MethodResult | None
    rows: list[BaselineRow] = field(default_factory=list)
    before_again: MethodResult | None = None
    again: list[MethodResult] = field(default_factory=list)  # blocks read to confirm
    order: str = "A-B"
    notes: list[str] = field(default_factory=list)
    drift: Drift = field(default_factory=Drift.none)
    calibrated: bool = False  # a calibration ran first (no profile for this host and flags)

    def lines(self) -> list[str]:
        """The comparison, the order it was measured in with the drift it carries, and any
        note on sample size."""
        if not self.rows:
            return list(self.notes)
        return [*self.table_lines(), *(f"  {n}" for n in self.note_lines())]

    def table_lines(self) -> list[str]:
        """The comparison's table: a row per figure per point (never to be wrapped)."""
        return comparison_table(self.rows)

    def note_lines(self) -> list[str]:
        """What the table's figures are, the drift they carry and any note on sample size:
        sentences (a narrow window wraps them)."""
        if not self.rows:
            return list(self.notes)
        sampled = f"sampling: {self.before.sampling_label}, both sides"
        return [COMPARISON_NOTE, sampled, self.drift.text(), *self.notes]

    def as_dict(self) -> dict[str, Any]:
        def run_id(r: MethodResult | None) -> int | None:
            return r.run_id if r else None

        return {
            "ok": self.result.ok,
            "order": self.order,
            "drift": self.drift.as_dict(),
            "calibrated": self.calibrated,
            "runs": {
                "before": run_id(self.before),
                "after": run_id(self.after),
                "before_again": run_id(self.before_again),
                "again": [run_id(r) for r in self.again],
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


ORDERS = ("auto", "A-B", "A-B-A-B", "side-by-side")


def choose_order(
    order: str | None,
    bracket: bool | None,
    noise: NoiseProfile | None,
    *,
    side_by_side: bool = False,
) -> str:
    """The order asked for; else side by side where the host holds both configurations
    (`side_by_side`); else bracketing when the host's measured restart is cheap
    (`NoiseProfile.order`); else A-B."""
    if order not in (None, "auto"):
        if order not in ORDERS:
            raise MeasureError(f"Unknown order {order!r}; use one of {', '.join(ORDERS)}.")
        return order
    if bracket is not None:
        return "A-B-A-B" if bracket else "A-B"
    if side_by_side:
        return "side-by-side"
    return noise.order() if noise is not None else "A-B"


def available_orders(service: EngineService, noise: NoiseProfile | None) -> list[str]:
    """The orders this host can measure in, the default first (what the TUI offers):
    side by side where it holds both configurations, then A-B-A-B and A-B (the cheaper
    restart first)."""
    restart = noise.order() if noise is not None else "A-B"
    orders = ["A-B-A-B", "A-B"] if restart == "A-B-A-B" else ["A-B", "A-B-A-B"]
    return (["side-by-side"] if can_run_side_by_side(service) else []) + orders


async def apply_with_baseline(
    service: EngineService,
    plan: FlagPlan,
    *,
    timeout: float,
    store: RunStore | None = None,
    on_note: Callable[[str], None] | None = None,
    target: SampleTarget | None = None,
    bracket: bool | None = None,
    baseline: BaselinePlan | None = None,
    overrides: dict[str, Any] | None = None,
    order: str | None = None,
    noise: NoiseProfile | None = None,
    calibrate: bool = True,
) -> BaselineApply:
    """Baseline, apply (restart and follow to ready), baseline again; compare under the
    protocol (`pairing`): the after side reads exactly the rounds of the same passages
    the before side read, and every time interval carries the host's drift.

    Side by side (`side_by_side`: B as a second engine process, interleaved request by
    request, drift cancelling in each pair) is the default where the host can hold both
    (the bundled engine on this machine); otherwise the drift comes from `noise`, else
    the history's profile for this host and flags;
    with none and `calibrate`, `specconsole calibrate`'s measurement runs first. The
    order is `order` ("A-B", "A-B-A-B"; None or "auto": bracketing when the measured
    restart is under a minute, else A-B); `bracket` True / False forces one (the old
    switch). The points (`baseline`, or the profile's `[baseline]` with `overrides`) are
    fixed before the change, so both sides measure the same ones."""
    target = target or SampleTarget()
    session = MeasureSession(service, store=store, on_note=on_note)
    points = baseline or await plan_for(session, **(overrides or {}))
    for note in points.notes:
        session.note(f"baseline: {note}")
    calibrated = False
    if noise is None:  # the host's profile; measured first when it has none (said so)
        noise = await noise_for(service, store, plan=points, calibrate_if_missing=False)
        if noise is None and calibrate and store is not None:
            noise = await noise_for(service, store, plan=points, timeout=timeout,
                                    on_note=session.note)  # fmt: skip
            calibrated = noise is not None
    chosen = choose_order(order, bracket, noise, side_by_side=can_run_side_by_side(service))
    drift = noise.drift(chosen) if noise is not None else Drift.none(chosen)
    if chosen == "side-by-side":
        done = await _side_by_side(session, service, plan, points, timeout=timeout,
                                   target=target, store=store, drift=drift)  # fmt: skip
    elif chosen == "A-B-A-B":
        done = await _bracketed(session, service, plan, points, timeout=timeout, target=target,
                                drift=drift, looks=first_look(drift, noise))  # fmt: skip
    else:
        done = await _a_then_b(session, service, plan, points, timeout=timeout, target=target,
                               drift=drift, looks=first_look(drift, noise))  # fmt: skip
    done.drift, done.calibrated = drift, calibrated
    if chosen != "side-by-side" and worth_reading_again(done.rows, noise):
        await confirm(session, service, plan, points, done, timeout=timeout, target=target,
                      noise=noise)  # fmt: skip
    if calibrated:
        done.notes.insert(0, "calibrated first: no noise profile for this host and flags")
    return done


async def _side_by_side(
    session: MeasureSession,
    service: EngineService,
    plan: FlagPlan,
    points: BaselinePlan,
    *,
    timeout: float,
    target: SampleTarget,
    store: RunStore | None,
    drift: Drift,
) -> BaselineApply:
    """B as a second process, interleaved with A; the drift term is the two processes'
    calibrated offset (time drift cancels in each pair)."""
    if not can_run_side_by_side(service):
        raise MeasureError("Side by side needs the bundled engine on this machine; use "
                           "--order A-B or A-B-A-B.")  # fmt: skip
    before, after, result = await side_by_side(
        service, plan, points, timeout=timeout, target=target, store=store,
        on_note=session.note,
    )  # fmt: skip
    rows = baseline_comparison(before, after, drift=drift) if after is not None else []
    return BaselineApply(result, before, after, rows, order="side-by-side",
                         notes=noise_notes(before=before, after=after))  # fmt: skip


async def _a_then_b(
    session: MeasureSession,
    service: EngineService,
    plan: FlagPlan,
    points: BaselinePlan,
    *,
    timeout: float,
    target: SampleTarget,
    drift: Drift,
    looks: tuple[float, ...],
) -> BaselineApply:
    contexts = ",".join(str(c) for c in points.contexts)
    session.note(f"baseline before the change (contexts {contexts}, {points.output} tokens, "
                 f"{','.join(points.text_types)}) ...")  # fmt: skip
    before = await run_baseline(session, points, target=target)
    result = await service.apply(plan, timeout=timeout)
    if not result.ok:
        return BaselineApply(result, before, None)
    session.note("baseline after the change (the same rounds of the same passages) ...")
    after = await run_baseline(session, points, target=target, rounds=rounds_by_point(before))
    return BaselineApply(
        result, before, after, baseline_comparison(before, after, drift=drift, looks=looks),
        notes=noise_notes(before=before, after=after),
    )  # fmt: skip


async def _bracketed(
    session: MeasureSession,
    service: EngineService,
    plan: FlagPlan,
    points: BaselinePlan,
    *,
    timeout: float,
    target: SampleTarget,
    drift: Drift,
    looks: tuple[float, ...],
) -> BaselineApply:
    """A (half the rounds), apply B, B (all its rounds), roll back to A (last-good), A
    (the other half: A's rounds then equal B's), apply B again."""
    half = max(1, math.ceil(target.max_rounds / 2))
    session.note("baseline before the change, first half ...")
    first = min(target.min_rounds, half)
    before = await run_baseline(session, points, target=target, min_rounds=first, max_rounds=half)
    k = rounds_by_point(before)
    result = await service.apply(plan, timeout=timeout)
    if not result.ok:
        return BaselineApply(result, before, None, order="A-B-A-B")
    session.note("baseline after the change ...")
    least = min(max(2 * max(k.values(), default=1), target.min_rounds), target.max_rounds)
    after = await run_baseline(session, points, target=target, min_rounds=least)
    m = rounds_by_point(after)
    session.note("back to the flags before the change (last-good) for the second half ...")
    back = await service.rollback(timeout=timeout)
    before_again = None
    if back.ok:
        rest = {p: max(0, m.get(p, 0) - k.get(p, 0)) for p in m}
        before_again = await run_baseline(
            session, points, target=target, prior=before.samples,
            first_index=max(k.values(), default=0) * (target.passages or 1), rounds=rest,
        )  # fmt: skip
    else:
        session.note(f"the flags before the change did not come back ({back.event.describe()})")
    session.note("applying the change again ...")
    result = await service.apply(plan, timeout=timeout)
    extra = (before_again,) if before_again is not None else ()
    rows = baseline_comparison(before, after, *extra, drift=drift, looks=looks) if result.ok else []
    return BaselineApply(
        result, before, after, rows, before_again=before_again, order="A-B-A-B",
        notes=noise_notes(before=before, after=after, before_again=before_again),
    )  # fmt: skip
