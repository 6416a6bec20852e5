"""A step-time change across a restart, measured again before anything is reported.

Commit is exact under greedy decoding, so no drift can fake an acceptance change; a step
time that moved beyond timing noise alone across a restart (whether the drift term makes
it a finding or leaves it too wide to tell) is exactly what a slow spell of the host
fakes (on this kind of shared host now and then a block runs 30-45% slower for tens of
seconds, every process alike). So it is read again (`confirm`): back to A for one more
block of A, then B again for one more block of B. Each side then has two blocks.

Two blocks of one side that disagree beyond the host's calm drift (the calibration's
estimate without its spell blocks) and their own timing noise are a spell in one of
them, or a drift too big to tell: that side gets a third block, and a block that
disagrees with the other two while they agree is left out (median of three; the note
names it and its shift). Otherwise every block stays in. The comparison pools each
side's kept blocks, and the shifts between them join the calibration's calm ones in the
drift term ("A-B twice"), so what is left of a spell shows as a wider interval, never as
a finding.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from console.analysis.noise_profile import Z99, NoiseProfile
from console.analysis.pairing import PairedChange
from console.analysis.records import RequestSample
from console.analysis.sample_size import SampleTarget
from console.experiments.baseline_block import BaselinePlan, rounds_by_point, run_baseline
from console.experiments.baseline_rows import BaselineRow, compare_samples
from console.experiments.calibrate import block_shift
from console.measure.methods import MethodResult
from console.measure.session import MeasureSession

if TYPE_CHECKING:
    from console.experiments.baseline import BaselineApply
    from console.service import EngineService, FlagPlan


def _step_moved(row: BaselineRow) -> bool:
    """Step time moved beyond the row's timing noise alone (the drift term left out),
    commit unmoved: a finding, or one that the calibrated drift alone makes too wide."""
    step = row.step_time_s.moved
    if row.commit_len.finding or not isinstance(step, PairedChange) or not step.has_interval:
        return False
    return abs(math.log(step.ratio.value)) > step.timing_rel


def rests_on_step_time(rows: Sequence[BaselineRow]) -> bool:
    """A row whose step time alone moved beyond timing noise: the shape a slow spell of
    the host between two blocks takes, and one a host's drift can leave undecided."""
    return any(_step_moved(r) for r in rows)


def agree(a: Sequence[RequestSample], b: Sequence[RequestSample], calm_sd: float) -> bool:
    """Whether two blocks of one configuration read alike: their shift within the 99%
    band of a calm host's drift (`calm_sd`) and their own timing noise."""
    shift = block_shift(a, b)
    if shift is None:
        return True
    d, var_noise = shift
    return abs(d) <= Z99 * math.sqrt(calm_sd**2 + var_noise)


def odd_one_out(blocks: Sequence[Sequence[RequestSample]], calm_sd: float) -> int | None:
    """Of three blocks of one configuration, the one that disagrees with both others
    while they agree with each other; None when there is no such block."""
    for i in range(len(blocks)):
        others = [b for j, b in enumerate(blocks) if j != i]
        if agree(*others, calm_sd) and not any(agree(blocks[i], o, calm_sd) for o in others):
            return i
    return None


async def confirm(
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
    """Read the finding again, in place on `done`: its rows, drift, blocks and notes."""
    first = done.rows
    session.note("step time moved at unchanged commit across a restart: measuring both "
                 "sides again before reporting anything ...")  # fmt: skip
    a_first = [*done.before.samples, *(done.before_again.samples if done.before_again else [])]
    rounds = rounds_by_point(done.after)

    async def read() -> MethodResult:
        return await run_baseline(session, points, target=target, rounds=rounds)

    async def read_a() -> MethodResult | None:  # back to A for one block, then B again
        back = await service.rollback(timeout=timeout)
        if not back.ok:
            done.notes.append(f"not measured again: the flags before the change did not come "
                              f"back ({back.event.describe()})")  # fmt: skip
            return None
        block = await read()
        result = await service.apply(plan, timeout=timeout)
        if not result.ok:
            done.result, done.rows = result, []
            done.notes.append("the change did not apply again; no comparison is reported")
            return None
        return block

    again = await read_a()
    if again is None:
        return
    done.again = [again]
    b_block = await read()
    done.again.append(b_block)
    # A calm host's drift is the calibration's estimate, not widened: widening is for
    # intervals; here a block that stands out from it is what is looked for.
    calm = noise.calm().shift_sd if noise is not None else 0.0
    sides = {
        "before": [a_first, list(again.samples)],
        "after": [done.after.samples, list(b_block.samples)],
    }
    for side, blocks in sides.items():
        if agree(*blocks, calm):
            continue
        session.note(f"the {side} side's two blocks disagree: a third block of it ...")
        third = await (read() if side == "after" else read_a())
        if third is None:
            return
        done.again.append(third)
        blocks.append(list(third.samples))
        odd = odd_one_out(blocks, calm)
        if odd is not None:
            shift = math.expm1(sum(block_shift(o, blocks[odd])[0] for o in blocks if o is not
                                   blocks[odd]) / 2)  # fmt: skip
            done.notes.append(
                f"left out: the {side} side's block {odd + 1} of 3, {shift:+.0%} "
                "against its other two, which agree (a slow spell of the host)"
            )
            del blocks[odd]
    _judge_again(done, sides, noise, service, first)


def _judge_again(
    done: BaselineApply,
    sides: dict[str, list[Sequence[RequestSample]]],
    noise: NoiseProfile | None,
    service: EngineService,
    first: Sequence[BaselineRow],
) -> None:
    """The comparison of each side's kept blocks, pooled, with the shifts between them
    joining the calibration's calm blocks in the drift ("A-B twice")."""
    own = [d for blocks in sides.values() for a, b in itertools.pairwise(blocks)
           if (d := block_shift(a, b))]  # fmt: skip
    # The calibration without its spell blocks: this comparison's own blocks were checked
    # against each other, so a spell here was read again and left out (or is in `own`).
    profile = noise or NoiseProfile(service.profile.name, service.profile.engine, "", (), (), ())
    drift = profile.calm().with_shifts(own).drift("A-B twice")
    done.drift = dataclasses.replace(drift, source=(
        f"{profile.drift('A-B').source if noise else 'no calibration'}, and this "
        f"comparison's own shifts {', '.join(f'{math.expm1(d):+.1%}' for d, _ in own)}"
    ))  # fmt: skip
    pooled = {side: [s for b in blocks for s in b] for side, blocks in sides.items()}
    done.rows = compare_samples(pooled["before"], pooled["after"], drift=done.drift)
    moved = "; ".join(f"{r.text_type} {r.context} step time {r.step_time_s.change_text()}"
                      for r in first if _step_moved(r))  # fmt: skip
    done.notes.append(f"first reading: {moved}; measured again, the rows above pool the "
                      "blocks kept")  # fmt: skip
