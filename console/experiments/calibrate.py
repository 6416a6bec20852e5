"""`specconsole calibrate HOST`: measure the host's noise, once per host and flags.

Blocks of the baseline's points with unchanged flags, a restart between the first few
(the restart a flag change needs, so its cost is part of what is measured) and the rest
read in the same process: per point the request-to-request spread of step time within a
block, between each two blocks the shift of the whole block's step time (paired by
passage, `pairing.paired_figures`), and how long each restart took to ready. The drift is
the host's, in time, more than the process's (a slow spell hits every process alike), so
blocks without a restart measure it too, at no restart's cost: a host whose restart takes
ten minutes still gets five shifts. The profile goes into the history
(`RunStore.add_noise_profile`), where every later comparison on the host finds its drift
term, and its restart time picks the default order (bracketing when a restart is under a
minute). Where the host
holds two engines at once (side by side, the default order there), two second processes
with the same flags are each interleaved with the service: how far two processes of one
configuration differ is the drift term a side-by-side comparison carries.

`noise_for` is what `apply_with_baseline` calls: the stored profile for the host and
flags, or, when there is none, a calibration run first (said in the output).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from console.analysis.noise_profile import NoiseProfile, point_spreads
from console.analysis.pairing import PairedChange, paired_figures
from console.analysis.records import RequestSample, flags_hash
from console.analysis.sample_size import SampleTarget
from console.experiments.side_by_side import beside, can_run_side_by_side
from console.measure import methods
from console.measure.session import MeasureError, MeasureSession

if TYPE_CHECKING:
    from console.experiments.baseline import BaselinePlan
    from console.service import EngineService
    from console.store import RunStore

BLOCKS = 6  # five shifts: the drift from two is widened x3.85 for their count, from five x1.57
RESTARTS = 2  # between the first blocks; the rest follow in the same process
ROUNDS = 3  # whole rounds of every passage per point and block
PASSAGES = 2
PROCESS_PAIRS = 2  # second processes beside the service: two offsets give a spread


def _point_key(s: RequestSample) -> tuple[str, int]:
    return s.text_type, s.context_tokens


def block_shift(
    a: Sequence[RequestSample], b: Sequence[RequestSample]
) -> tuple[float, float] | None:
    """log(b / a) of step time between two blocks, paired by passage per point and
    averaged over the points both measured, with the variance its own timing noise
    explains; None when they share no point."""
    logs, variances = [], []
    for point in sorted({_point_key(s) for s in a} & {_point_key(s) for s in b}):
        paired = paired_figures([s for s in a if _point_key(s) == point],
                                [s for s in b if _point_key(s) == point])  # fmt: skip
        moved = paired.figure("step_time_s").moved if paired is not None else None
        if isinstance(moved, PairedChange):
            logs.append(math.log(moved.ratio.value))
            variances.append(moved.se**2)
    if not logs:
        return None
    return statistics.fmean(logs), statistics.fmean(variances) / len(variances)


def profile_from_blocks(
    host: str,
    engine: str,
    flags: str,
    blocks: Sequence[Sequence[RequestSample]],
    restart_s: Sequence[float],
    notes: Sequence[str] = (),
    *,
    offsets: Sequence[tuple[float, float]] = (),
) -> NoiseProfile:
    """The noise profile of measured blocks (pure: the arithmetic of `calibrate`), with
    the side-by-side offsets (log shift, its noise variance) where measured."""
    tagged = [dataclasses.replace(s, prompt_id=f"{i}:{s.prompt_id}")
              for i, block in enumerate(blocks) for s in block]  # fmt: skip
    shifts = [d for d in (block_shift(a, b) for a, b in itertools.pairwise(blocks)) if d]
    return NoiseProfile(
        host=host, engine=engine, flags_hash=flags, points=point_spreads(tagged),
        shifts=tuple(d for d, _ in shifts), shift_var_noise=tuple(v for _, v in shifts),
        restart_s=tuple(restart_s), notes=tuple(notes),
        process_offsets=tuple(d for d, _ in offsets),
        process_var_noise=tuple(v for _, v in offsets),
    )  # fmt: skip


async def calibrate(
    service: EngineService,
    store: RunStore | None,
    *,
    plan: BaselinePlan,
    blocks: int = BLOCKS,
    restarts: int = RESTARTS,
    rounds: int = ROUNDS,
    timeout: float | None = None,
    on_note: Callable[[str], None] | None = None,
) -> NoiseProfile:
    """Measure and store the host's noise profile with its current flags, at the points
    of `plan` (the baseline's: `baseline.plan_for`): `blocks` blocks, a restart before
    each of the first `restarts` after the first."""
    if blocks < 2:
        raise MeasureError(f"Calibration needs at least two blocks (one shift), not {blocks}.")
    session = MeasureSession(service, store=store, on_note=on_note)
    points = plan
    target = SampleTarget(target_rel=0.0, min_repeat=rounds * PASSAGES,
                          max_repeat=rounds * PASSAGES, passages=PASSAGES)  # fmt: skip
    measured: list[list[RequestSample]] = []
    restart_times: list[float] = []
    for i in range(blocks):
        if 0 < i <= restarts:
            session.note(f"calibration: restart {i} of {min(restarts, blocks - 1)} with "
                         "unchanged flags ...")  # fmt: skip
            started = time.monotonic()
            event = await service.restart(wait=True, timeout=timeout)
            if event.state != "ready":
                raise MeasureError(f"The engine did not come back ready ({event.describe()}); "
                                   "calibration stopped.")  # fmt: skip
            restart_times.append(time.monotonic() - started)
        session.note(f"calibration: block {i + 1} of {blocks} ...")
        with session.labelled("calibration"):
            result = await methods.context_sweep(
                session, contexts=list(points.contexts), output_tokens=points.output,
                text_types=list(points.text_types), target=target,
            )  # fmt: skip
        measured.append(result.samples)
    offsets = await _process_offsets(service, session, points, target, timeout)
    facts = await session.facts(refresh=True)
    profile = profile_from_blocks(
        service.profile.name, service.profile.engine, facts.flags_hash or flags_hash({}),
        measured, restart_times, offsets=offsets,
    )  # fmt: skip
    if store is not None:
        await store.add_noise_profile(profile)
    return profile


async def _process_offsets(
    service: EngineService,
    session: MeasureSession,
    points: BaselinePlan,
    target: SampleTarget,
    timeout: float | None,
) -> list[tuple[float, float]]:
    """Where the host holds two engines at once (the default order is then side by
    side): `PROCESS_PAIRS` second processes with the same flags, each interleaved with
    the service, in the blocks' own rounds (`target`); per pair the shift of step time
    between the two (`block_shift`)."""
    if not can_run_side_by_side(service):
        return []
    flags = dict((await service.current_config()).flags)
    out = []
    for i in range(PROCESS_PAIRS):
        session.note(f"calibration: two processes with the same flags, side by side "
                     f"({i + 1} of {PROCESS_PAIRS}) ...")  # fmt: skip
        a, b = await beside(service, flags, points, timeout=timeout or 600.0, target=target,
                            on_note=session.note)  # fmt: skip
        shift = block_shift(a.samples, b.samples)
        if shift is not None:
            out.append(shift)
    return out


async def noise_for(
    service: EngineService,
    store: RunStore | None,
    *,
    plan: BaselinePlan,
    calibrate_if_missing: bool = True,
    timeout: float | None = None,
    on_note: Callable[[str], None] | None = None,
) -> NoiseProfile | None:
    """The stored noise profile of this host with its current flags, else its newest with
    other flags (the drift's source names them); without any and with
    `calibrate_if_missing`, a calibration first (the note says so)."""
    if store is None:
        return None
    flags = flags_hash(dict((await service.current_config()).flags))
    host = service.profile.name
    # These flags' own profile, else the host's newest with other flags (drift is mostly
    # the host's: a flag change would otherwise calibrate again before every baseline).
    found = await store.noise_profile(host, flags) or await store.noise_profile(host)
    if found is not None or not calibrate_if_missing:
        return found
    if on_note is not None:
        on_note(f"no noise profile for {host} with these flags yet: calibrating first "
                f"({BLOCKS} blocks with unchanged flags, {RESTARTS} restarts among them; "
                "once per host and flags, `specconsole calibrate` runs it alone)")  # fmt: skip
    return await calibrate(service, store, plan=plan, timeout=timeout, on_note=on_note)
