"""Side by side: A and B as two engine processes at once, interleaved request by request.

Where the host can hold both configurations (the bundled pair on this machine), the best
order is neither A-B nor A-B-A-B: B runs as a second engine process on a second port with
the new flags while A keeps running, and every request of A is followed by the same
request on B (which side goes first alternates by round). The two requests of a pair are
adjacent in time, so drift on the host cancels in each pair by construction, and the
paired interval (`pairing`) holds timing noise alone. No restart sits between the sides.

Two processes share the host's cores: the idle one must cost the busy one nothing, so
B's OpenMP threads sleep when idle (OMP_WAIT_POLICY=PASSIVE) instead of spinning; A is
the running service, started with the profile's env (the bundled engine waits passively
by default: engine/serve/cpu_threads.py). Afterwards B is stopped and the change is
applied to A as asked (one restart), so the flags end as with every other order.

Reading on (`_settled`) stops on widths alone: each side's ± 5% and the paired change's
timing part within ± 10%, up to the paired ceiling. Width does not move with the
estimate, so this is one look, not several: the change is judged once, when it stops, at
the comparison's whole 99% (`sample_size`), with no spending over looks.
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from console.analysis.records import RequestSample
from console.analysis.sample_size import (
    SampleSize,
    SampleTarget,
    narrow_enough,
    paired_narrow_enough,
    rel_half_width,
)
from console.analysis.stats import summarize
from console.backends import get_adapter
from console.measure.methods import MethodResult
from console.measure.session import MeasureError, MeasureSession

if TYPE_CHECKING:
    from console.experiments.baseline import BaselinePlan
    from console.service import EngineService, FlagPlan
    from console.store import RunStore

PASSIVE = {"OMP_WAIT_POLICY": "PASSIVE"}


def can_run_side_by_side(service: EngineService) -> bool:
    """An engine whose second process fits beside the first (the bundled pair), on this
    machine."""
    profile = service.profile
    return get_adapter(profile.engine).fits_side_by_side and profile.ssh is None


def _free_local_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def second_profile(service: EngineService, flags: dict[str, Any], state_dir: str) -> Any:
    """The host profile of B: A's launcher and env (made passive), the new flags, its own
    port and state directory."""
    profile = service.profile
    launch = profile.launch.model_copy(update={"env": {**profile.launch.env, **PASSIVE}})
    new_flags = {k: v for k, v in flags.items() if k != "port"}
    return profile.model_copy(
        update={"name": f"{profile.name}-side-b", "port": _free_local_port(),
                "flags": new_flags, "launch": launch, "state_dir": state_dir,
                "model_path": None, "draft_model_path": None},
    )  # fmt: skip


async def _interleaved(
    sa: MeasureSession,
    sb: MeasureSession,
    points: BaselinePlan,
    target: SampleTarget,
) -> tuple[MethodResult, MethodResult]:
    """Whole rounds of every passage of every point, each request on A and on B back to
    back, until both sides' tok/s intervals and the paired change between them are
    narrow enough (or the ceilings: `_settled`)."""
    params = {"contexts": list(points.contexts), "output_tokens": points.output,
              "text_types": list(points.text_types), "order": "side-by-side",
              "sample_target": target.as_dict()}  # fmt: skip
    todo = [(kind, c) for c in points.contexts for kind in points.text_types]
    sizes = (SampleSize(target), SampleSize(target))
    with sa.labelled("baseline"), sb.labelled("baseline"):
        async with sa.run("context-sweep", params) as ra, sb.run("context-sweep", params) as rb:
            mine: dict[tuple[str, int], tuple[list, list]] = {p: ([], []) for p in todo}
            open_points, done = list(todo), 0
            while open_points and done < target.paired_max_rounds:
                for j in range(target.passages or 1):
                    index = target.passage(done * (target.passages or 1) + j)
                    for point in open_points:
                        await _pair(sa, sb, ra, rb, point, points.output, index, done % 2,
                                    mine[point])  # fmt: skip
                done += 1
                for point in open_points:
                    for size in sizes:
                        size.rounds[point] = size.rounds.get(point, 0) + 1
                if done >= target.min_rounds and target.target_rel > 0:
                    open_points = [
                        p
                        for p in open_points
                        if not _settled(mine[p], target, done, rows=len(todo))
                    ]
            for point, sides in mine.items():
                for size, samples in zip(sizes, sides, strict=True):
                    size.rel[point] = rel_half_width(samples)
    return _result(ra, sizes[0]), _result(rb, sizes[1])


def _settled(
    sides: tuple[list[RequestSample], list[RequestSample]],
    target: SampleTarget,
    rounds: int,
    *,
    rows: int,
) -> bool:
    """Whether a point has read enough: each side narrow and the change between them
    (what is reported) narrow; past the usual ceiling, the change alone; and at the
    paired ceiling, whatever it reads (`SampleTarget.paired_max_rounds`)."""
    if rounds >= target.paired_max_rounds:
        return True
    paired = paired_narrow_enough(*sides, rows=rows)
    if rounds >= target.max_rounds:
        return paired
    return paired and all(narrow_enough(s, target) for s in sides)


async def _pair(sa, sb, ra, rb, point, output, index, b_first, into) -> None:
    kind, context = point
    spec = await sa.spec(kind, context, output, index=index)
    order = ((sb, rb, 1), (sa, ra, 0)) if b_first else ((sa, ra, 0), (sb, rb, 1))
    for session, record, side in order:
        sample: RequestSample = await session.measure(spec, record)
        into[side].append(sample)


def _result(record: Any, size: SampleSize) -> MethodResult:
    return MethodResult("context-sweep", record.run_id, list(record.samples),
                        summarize(record.samples), {"sample_size": size.as_dict()})  # fmt: skip


async def side_by_side(
    service: EngineService,
    plan: FlagPlan,
    points: BaselinePlan,
    *,
    timeout: float,
    target: SampleTarget,
    store: RunStore | None = None,
    on_note: Callable[[str], None] | None = None,
) -> tuple[MethodResult, MethodResult | None, Any]:
    """A (the running service) against B (a second process with the new flags),
    interleaved; then B stopped and the change applied to A. Returns (A's block, B's
    block or None when B did not start, the apply result)."""
    sa = MeasureSession(service, store=store, on_note=on_note)
    before, after = await beside(service, dict(plan.new.flags), points, timeout=timeout,
                                 target=target, store=store, on_note=on_note)  # fmt: skip
    sa.note("applying the change to the service (one restart) ...")
    result = await service.apply(plan, timeout=timeout)
    return before, after, result


async def beside(
    service: EngineService,
    flags: dict[str, Any],
    points: BaselinePlan,
    *,
    timeout: float,
    target: SampleTarget,
    store: RunStore | None = None,
    on_note: Callable[[str], None] | None = None,
) -> tuple[MethodResult, MethodResult]:
    """A (the running service) and B (a second process with `flags`) interleaved, then B
    stopped; the service is left as it was. With A's own flags, this measures how far
    two processes of one configuration differ (`calibrate`)."""
    from console.service import EngineService as Service

    if not can_run_side_by_side(service):
        raise MeasureError("Side by side needs the bundled engine on this machine.")
    sa = MeasureSession(service, store=store, on_note=on_note)
    with tempfile.TemporaryDirectory(prefix="specconsole-side-b-") as state:
        profile_b = second_profile(service, flags, state)
        sa.note(f"side by side: starting B on port {profile_b.port} ...")
        async with Service.open(profile_b) as other:
            try:
                event = await other.start(wait=True, timeout=timeout)
                if event.state != "ready":
                    raise MeasureError(f"B did not start ({event.describe()}); nothing changed.")
                sb = MeasureSession(other, store=store, on_note=on_note)
                sa.note("side by side: A and B interleaved request by request ...")
                return await _interleaved(sa, sb, points, target)
            finally:
                with contextlib.suppress(Exception):
                    await other.stop(timeout=10)
