"""A step-time change across a restart, measured again before anything is reported.

Commit is exact under greedy decoding, so no drift can fake an acceptance change; a step
time that moved beyond timing noise alone across a restart (whether the drift term makes
it a finding or leaves it too wide to tell) is exactly what a slow spell of the host
fakes (on this kind of shared host now and then a block runs 30-45% slower for tens of
seconds, every process alike). So it is read again (`confirm`): back to A for one more
block of A, then B again for one more block of B. Each side then has two blocks. Where
the host's measured restart is cheap, a first reading too wide to tell on every row is
read again the same way: a spell inside one block widens that block's own timing noise
until the step time no longer stands out of it (`worth_reading_again`).

Two blocks of one side that disagree beyond the host's calm drift (the calibration's
estimate without its spell blocks) and their own timing noise are a spell in one of
them, or a drift too big to tell: that side gets a third block, and a block that ran
slower than the other two while they agree is left out (the note names it and its
shift); one that ran faster is the host's drift and stays in. Otherwise every block
stays in. The model needs this rule: it takes the drift as normal, and on a shared host
it is heavier-tailed (restarts here now and then come up 20-45% slower); one such block
in a side's two would otherwise be a finding, or a drift term too wide to read anything.
The comparison pools each side's kept blocks, and the shifts between them join the
calibration's calm ones in the drift term ("A-B twice"), so what is left of a spell
shows as a wider interval, never as a finding.

On a drifty host (a shared VM whose blocks shift 5-15% with unchanged flags) two blocks
a side can still leave every row too wide to tell a 25-40% step-time regression from
none: the drift term shrinks only with more blocks (a blocks before and b after leave
(1/a + 1/b) / 2 of its variance). So while no row is a finding, some row is too wide,
and the host's measured restart is cheap (under a minute: the calibration's), one more
block of each side is read, up to `MAX_BLOCKS` a side ("A-B repeated"); each reading
is judged as one look of a group-sequential test. Where a restart is slow (or
unmeasured) the note says what would narrow it instead.

The stopping rule. Reading on until something shows is a look per reading, and each look
at the same 99% is another chance for a null to pass it (four looks at 99% raise about
2.5% false alarms; a parser change read again that way came out "step time +21%
[+3%…+43%]": two blocks a side that happened to agree). So the comparison spends its 1%
over its looks (`analysis.sequential`: Lan-DeMets, O'Brien-Fleming type) and each look's
change intervals are built at that look's level: look k's information fraction is the
drift variance the most blocks it may read leave (`planned_blocks`: `MAX_BLOCKS` a side
where the restart is cheap, else the one reading again) over what its own blocks leave.
The first reading is the first look; a finding stands at the look it crosses, and no
replicate is needed: the spending already pays for every look. Whether to read on (a
step time that moved, rows too wide, sides that disagree) may depend on anything; the
looks' information does not depend on the change itself.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from console.analysis.noise_profile import Z99, Drift, NoiseProfile, repeated_order
from console.analysis.pairing import PairedChange, family_level
from console.analysis.records import RequestSample
from console.analysis.sample_size import SampleTarget
from console.analysis.student_t import t_quantile
from console.experiments.baseline_block import BaselinePlan, rounds_by_point, run_baseline
from console.experiments.baseline_rows import BaselineRow, compare_samples
from console.experiments.calibrate import block_shift
from console.measure.methods import MethodResult
from console.measure.session import MeasureSession

if TYPE_CHECKING:
    from console.experiments.baseline import BaselineApply
    from console.service import EngineService, FlagPlan


def _step_moved(row: BaselineRow, rows: int) -> bool:
    """Step time moved beyond the row's timing noise alone (the drift term left out) at
    the rows' one-look family level, commit unmoved: a finding, or one that the
    calibrated drift alone makes too wide. A reason to read on, never an answer, so it
    keeps the one-look level: a strict early look would hide the spell it looks for."""
    step = row.step_time_s.moved
    if row.commit_len.finding or not isinstance(step, PairedChange) or not step.has_interval:
        return False
    timing = t_quantile(family_level(rows), step.pairs - 1) * step.se if step.pairs > 1 else 0.0
    return abs(math.log(step.ratio.value)) > timing


def rests_on_step_time(rows: Sequence[BaselineRow]) -> bool:
    """A row whose step time alone moved beyond timing noise: the shape a slow spell of
    the host between two blocks takes, and one a host's drift can leave undecided."""
    return any(_step_moved(r, len(rows)) for r in rows)


def agree(a: Sequence[RequestSample], b: Sequence[RequestSample], calm_sd: float) -> bool:
    """Whether two blocks of one configuration read alike: their shift within the 99%
    band of a calm host's drift (`calm_sd`) and their own timing noise."""
    shift = block_shift(a, b)
    if shift is None:
        return True
    d, var_noise = shift
    return abs(d) <= Z99 * math.sqrt(calm_sd**2 + var_noise)


MAX_BLOCKS = 4  # blocks a side at most while every row is still too wide to tell
CONFIRM_BLOCKS = 2  # where a restart is not cheap: the one reading again a step time gets
NOT_CHEAP = ("still too wide to tell: more blocks of each side would narrow the drift term, "
             "but this host's restart is not measured cheap (`specconsole calibrate`); side "
             "by side cancels it")  # fmt: skip


def planned_blocks(noise: NoiseProfile | None) -> int:
    """The most blocks a side a comparison across a restart may read: its last look."""
    return MAX_BLOCKS if noise is not None and noise.cheap_restart else CONFIRM_BLOCKS


def information(drift: Drift, planned: int) -> float:
    """A look's information fraction: the drift variance `planned` blocks a side would
    leave (1 / planned of one block's) over what this look's blocks leave (`share`)."""
    return min(1.0, 1.0 / (planned * drift.share))


def first_look(drift: Drift, noise: NoiseProfile | None) -> tuple[float, ...]:
    """The first reading's look, as the first of the comparison's (A-B: one block a
    side; A-B-A-B's bracket leaves three quarters of it)."""
    return (information(drift, planned_blocks(noise)),)


def odd_one_out(blocks: Sequence[Sequence[RequestSample]], calm_sd: float) -> int | None:
    """Of three blocks or more of one configuration, the one that ran slower than every
    other while they all agree with each other; None when there is no such block.

    Only a slower one: a spell slows the host. A block that ran faster than two that
    agree is the host's drift showing, and leaving it out would hide the drift the
    comparison must carry (a parser change's two after blocks read 8% faster than the
    before side's, whose one block that agreed with them had been left out as a spell:
    `step -8% [-14%…-2%]`, a false alarm)."""
    if len(blocks) < 3:
        return None
    for i, block in enumerate(blocks):
        others = [b for j, b in enumerate(blocks) if j != i]
        alike = all(agree(x, y, calm_sd) for x, y in itertools.combinations(others, 2))
        apart = not any(agree(block, o, calm_sd) for o in others)
        slower = all((d := block_shift(o, block)) is None or d[0] > 0 for o in others)
        if alike and apart and slower:
            return i
    return None


def worth_reading_again(rows: Sequence[BaselineRow], noise: NoiseProfile | None) -> bool:
    """Whether a comparison across a restart is read again before it is reported: a step
    time that moved beyond timing noise alone (what a slow spell fakes), always; every
    row too wide to tell, where the host's measured restart is cheap. The second is
    also a spell's shape: one inside a block widens that block's own timing noise, so
    the step time no longer stands out of it (a -18% round slowdown on a calm host read
    'too wide to tell' on every row from one block a side)."""
    if rests_on_step_time(rows):
        return True
    every_row = all(map(_cannot_tell, rows))
    return too_wide(rows) and every_row and noise is not None and noise.cheap_restart


def _cannot_tell(row: BaselineRow) -> bool:
    """The row's own verdict is that it is too wide to tell."""
    return row.verdict is not None and row.verdict.outcome == "not enough evidence"


def too_wide(rows: Sequence[BaselineRow]) -> bool:
    """No row is a finding and some row's own verdict is that it cannot tell."""
    found = any(r.decode_tok_s.finding or r.commit_len.finding or r.step_time_s.finding
                for r in rows)  # fmt: skip
    unsure = any(map(_cannot_tell, rows))
    return bool(rows) and not found and unsure


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
    session.note(f"{_why_read_again(first)}: measuring both sides again before reporting "
                 "anything ...")  # fmt: skip
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
    left_out: set[str] = set()
    planned = planned_blocks(noise)
    looks = list(first_look(done.drift, noise))  # the first reading was the first look
    for side, blocks in sides.items():
        if agree(*blocks, calm):
            continue
        session.note(f"the {side} side's two blocks disagree: a third block of it ...")
        third = await (read() if side == "after" else read_a())
        if third is None:
            return
        done.again.append(third)
        blocks.append(list(third.samples))
        _leave_out_a_spell(done, side, blocks, calm, left_out)
    _judge_again(done, sides, noise, service, first, looks, planned)
    while too_wide(done.rows) and max(len(b) for b in sides.values()) < MAX_BLOCKS:
        if noise is None or not noise.cheap_restart:
            done.notes.append(NOT_CHEAP)
            return
        session.note("every row still too wide to tell: one more block of each side ...")
        a_block = await read_a()
        if a_block is None:
            return
        b_block = await read()
        done.again += [a_block, b_block]
        for side, block in (("before", a_block), ("after", b_block)):
            sides[side].append(list(block.samples))
            _leave_out_a_spell(done, side, sides[side], calm, left_out)
        _judge_again(done, sides, noise, service, first, looks, planned)


def _why_read_again(first: Sequence[BaselineRow]) -> str:
    if rests_on_step_time(first):
        return "step time moved at unchanged commit across a restart"
    return "every row too wide to tell across a restart, which is cheap here"


def _leave_out_a_spell(
    done: BaselineApply,
    side: str,
    blocks: list[Sequence[RequestSample]],
    calm: float,
    left_out: set[str],
) -> None:
    """Drop the block of `side` that disagrees with every other while they agree (at most
    one a side), and say so."""
    odd = odd_one_out(blocks, calm) if side not in left_out else None
    if odd is None:
        return
    others = [o for o in blocks if o is not blocks[odd]]
    shift = math.expm1(sum(block_shift(o, blocks[odd])[0] for o in others) / len(others))
    done.notes.append(
        f"left out: the {side} side's block {odd + 1} of {len(blocks)}, {shift:+.0%} "
        f"against its other {len(others)}, which agree (a slow spell of the host)"
    )
    left_out.add(side)
    del blocks[odd]


def _judge_again(
    done: BaselineApply,
    sides: dict[str, list[Sequence[RequestSample]]],
    noise: NoiseProfile | None,
    service: EngineService,
    first: Sequence[BaselineRow],
    looks: list[float],
    planned: int,
) -> None:
    """The comparison of each side's kept blocks, pooled, with the shifts between them
    joining the calibration's calm blocks in the drift ("A-B twice"), judged as the next
    of `looks` (appended: its information fraction against `planned` blocks a side)."""
    own = [d for blocks in sides.values() for a, b in itertools.pairwise(blocks)
           if (d := block_shift(a, b))]  # fmt: skip
    # The calibration without its spell blocks: this comparison's own blocks were checked
    # against each other, so a spell here was read again and left out (or is in `own`).
    profile = noise or NoiseProfile(service.profile.name, service.profile.engine, "", (), (), ())
    blocks = (len(sides["before"]), len(sides["after"]))
    drift = profile.calm().with_shifts(own).drift(repeated_order(*blocks))
    done.drift = dataclasses.replace(drift, blocks=blocks, source=(
        f"{profile.drift('A-B').source if noise else 'no calibration'}, and this "
        f"comparison's own shifts {', '.join(f'{math.expm1(d):+.1%}' for d, _ in own)}"
    ))  # fmt: skip
    # A look that adds no information (a spell left out) can spend nothing more: it keeps
    # the last look's fraction, and `sequential` gives it no boundary to cross.
    looks.append(max(information(done.drift, planned), looks[-1]))
    pooled = {side: [s for b in blocks for s in b] for side, blocks in sides.items()}
    done.rows = compare_samples(pooled["before"], pooled["after"], drift=done.drift,
                                looks=tuple(looks))  # fmt: skip
    moved = "; ".join(f"{r.text_type} {r.context} step time {r.step_time_s.change_text()}"
                      for r in first if _step_moved(r, len(first)))  # fmt: skip
    moved = moved or "every row too wide to tell"
    done.notes = [n for n in done.notes if not n.startswith("first reading")]
    done.notes.append(f"first reading: {moved}; measured again, the rows above pool the "
                      f"blocks kept ({blocks[0]} before, {blocks[1]} after)")  # fmt: skip
