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

Across a restart (A-B, A-B-A-B), a finding that rests on step time alone (commit
unmoved) is what a slow spell of the host fakes, so it is measured a second time before
it is reported (`_confirm`): back to A, A again, B again (A-B-A-B: B again). The
comparison then pools both blocks of each side, and the two shifts between a side's own
blocks join the calibration's in the drift term: a spell that hit one block shows there
as a wide interval, not as a finding.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.analysis.noise_profile import Drift, NoiseProfile
from console.analysis.records import RequestSample
from console.analysis.sample_size import SampleTarget
from console.config import BaselineProfile
from console.experiments.baseline_rows import (
    HEADERS,
    BaselineRow,
    baseline_comparison,
    compare_samples,
    comparison_lines,
)
from console.experiments.calibrate import block_shift, noise_for
from console.experiments.side_by_side import can_run_side_by_side, side_by_side
from console.measure import methods
from console.measure.methods import MethodResult
from console.measure.session import MeasureError, MeasureSession

if TYPE_CHECKING:
    from console.service import ApplyResult, EngineService, FlagPlan
    from console.store import RunStore

# The rows moved to `baseline_rows`; their names stay importable from here.
__all__ = ["HEADERS", "BaselineApply", "BaselinePlan", "BaselineRow", "apply_with_baseline",
           "available_orders", "baseline_comparison", "baseline_plan", "choose_order",
           "compare_samples", "comparison_lines", "plan_for", "run_baseline"]  # fmt: skip

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
    max_rounds: int | None = None,
    rounds: dict[tuple[str, int], int] | None = None,
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
            max_rounds=max_rounds,
            rounds=rounds,
        )


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
    after_again: MethodResult | None = None  # a step-time finding measured again
    order: str = "A-B"
    notes: list[str] = field(default_factory=list)
    drift: Drift = field(default_factory=Drift.none)
    calibrated: bool = False  # a calibration ran first (no profile for this host and flags)

    def lines(self) -> list[str]:
        """The comparison, the order it was measured in with the drift it carries, and any
        note on sample size."""
        if not self.rows:
            return list(self.notes)
        return [*comparison_lines(self.rows), f"  {self.drift.text()}",
                *(f"  {n}" for n in self.notes)]  # fmt: skip

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
                "after_again": run_id(self.after_again),
            },
            "rows": [r.as_dict() for r in self.rows],
            "sample_size": {
                side: r.figures.get("sample_size")
                for side, r in (
                    ("before", self.before),
                    ("after", self.after),
                    ("before_again", self.before_again),
                    ("after_again", self.after_again),
                )
                if r is not None
            },
            "notes": list(self.notes),
        }


def rounds_by_point(result: MethodResult) -> dict[tuple[str, int], int]:
    """The whole rounds each point of this block took."""
    points = (result.figures.get("sample_size") or {}).get("points") or []
    return {(p["text_type"], int(p["context"])): int(p["rounds"]) for p in points}


def _noise_notes(**blocks: MethodResult | None) -> list[str]:
    """The sample-size sentence of each block that did not reach the target, by side."""
    notes = []
    for side, r in blocks.items():
        message = r and (r.figures.get("sample_size") or {}).get("message")
        if message:
            notes.append(f"{side.replace('_', ' ')}: {message}")
    return notes


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
                                drift=drift)  # fmt: skip
    else:
        done = await _a_then_b(session, service, plan, points, timeout=timeout, target=target,
                               drift=drift)  # fmt: skip
    done.drift, done.calibrated = drift, calibrated
    if chosen != "side-by-side" and _rests_on_step_time(done.rows):
        await _confirm(session, service, plan, points, done, timeout=timeout, target=target,
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
                         notes=_noise_notes(before=before, after=after))  # fmt: skip


async def _a_then_b(
    session: MeasureSession,
    service: EngineService,
    plan: FlagPlan,
    points: BaselinePlan,
    *,
    timeout: float,
    target: SampleTarget,
    drift: Drift,
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
        result, before, after, baseline_comparison(before, after, drift=drift),
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
    drift: Drift,
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
    rows = baseline_comparison(before, after, *extra, drift=drift) if result.ok else []
    return BaselineApply(
        result, before, after, rows, before_again=before_again, order="A-B-A-B",
        notes=_noise_notes(before=before, after=after, before_again=before_again),
    )  # fmt: skip


def _rests_on_step_time(rows: Sequence[BaselineRow]) -> bool:
    """A row whose finding is step time alone, commit unmoved: the shape a slow spell of
    the host between two blocks takes."""
    return any(r.step_time_s.finding and not r.commit_len.finding for r in rows)


async def _confirm(
    session: MeasureSession,
    service: EngineService,
    plan: FlagPlan,
    points: BaselinePlan,
    done: BaselineApply,
    *,
    timeout: float,
    target: SampleTarget,
    noise: NoiseProfile | None,
) -> None:
    """Measure the finding again, in place: A-B goes back to A for the before side's
    second block and applies B again; A-B-A-B (already in B, with two before blocks) reads
    B's second block. Both sides then pool two blocks, and the shift between each side's
    own two blocks joins the host's calibration in the drift ("A-B twice")."""
    first = done.rows
    session.note("step time moved at unchanged commit across a restart: measuring both "
                 "sides again before reporting it ...")  # fmt: skip
    if done.before_again is None:
        back = await service.rollback(timeout=timeout)
        if not back.ok:
            done.notes.append(f"not measured again: the flags before the change did not come "
                              f"back ({back.event.describe()})")  # fmt: skip
            return
        done.before_again = await run_baseline(session, points, target=target,
                                               rounds=rounds_by_point(done.before))  # fmt: skip
        result = await service.apply(plan, timeout=timeout)
        if not result.ok:
            done.result, done.rows = result, []
            done.notes.append("the change did not apply again; no comparison is reported")
            return
    done.after_again = await run_baseline(session, points, target=target,
                                          rounds=rounds_by_point(done.after))  # fmt: skip
    halves = ((done.before, done.before_again), (done.after, done.after_again))
    own = [d for d in (block_shift(a.samples, b.samples) for a, b in halves) if d]
    profile = noise or NoiseProfile(service.profile.name, service.profile.engine, "", (), (), ())
    done.drift = dataclasses.replace(profile.with_shifts(own).drift("A-B twice"), source=(
        f"{profile.drift('A-B').source if noise else 'no calibration'}, and this "
        f"comparison's own shifts {', '.join(f'{math.expm1(d):+.1%}' for d, _ in own)}"
    ))  # fmt: skip
    before = [*done.before.samples, *done.before_again.samples]
    done.rows = compare_samples(before, [*done.after.samples, *done.after_again.samples],
                                drift=done.drift)  # fmt: skip
    moved = "; ".join(f"{r.text_type} {r.context} step time {r.step_time_s.change_text()}"
                      for r in first if r.step_time_s.finding)  # fmt: skip
    done.notes.append(f"first reading: {moved}; measured again, the rows above pool both")
