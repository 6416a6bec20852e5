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
stays in. The comparison pools each side's kept blocks, and the shifts between them
join the calibration's calm ones in the drift term ("A-B twice"), so what is left of a
spell shows as a wider interval, never as a finding.

On a drifty host (a shared VM whose blocks shift 5-15% with unchanged flags) two blocks
a side can still leave every row too wide to tell a 25-40% step-time regression from
none: the drift term shrinks only with more blocks (a blocks before and b after leave
(1/a + 1/b) / 2 of its variance). So while no row is a finding, some row is too wide,
and the host's measured restart is cheap (under a minute: the calibration's), one more
block of each side is read, up to `MAX_BLOCKS` a side ("A-B repeated"); each reading
is judged at the same 99% as the first. Where a restart is slow (or unmeasured) the
note says what would narrow it instead.

Reading on until something shows is a second look, and a second look at the same 99%
is a second chance for a null to pass it: where the first reading was read again only
for being too wide (no step time stood out of it), a finding that shows later is read
once more (one more block of each side, past `MAX_BLOCKS` if need be) and stands only
if that reading keeps it. On this host, without it, a parser change read again this
way came out "step time +21% [+3%…+43%]": two blocks a side that happened to agree.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from console.analysis.noise_profile import Z99, NoiseProfile, repeated_order
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


MAX_BLOCKS = 4  # blocks a side at most while every row is still too wide to tell
NOT_CHEAP = ("still too wide to tell: more blocks of each side would narrow the drift term, "
             "but this host's restart is not measured cheap (`specconsole calibrate`); side "
             "by side cancels it")  # fmt: skip
REPLICATED = ("read once more: a finding that only a second look showed stands only if one "
              "more block of each side keeps it")  # fmt: skip


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


def step_found(rows: Sequence[BaselineRow]) -> bool:
    """A row whose step time is a finding at unchanged commit: what drift can fake."""
    return any(r.step_time_s.finding and not r.commit_len.finding for r in rows)


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
    _judge_again(done, sides, noise, service, first)
    unconfirmed = not rests_on_step_time(first)
    while step := _next_step(done.rows, sides, unconfirmed=unconfirmed):
        why, replicate = step
        unconfirmed = unconfirmed and not replicate
        if noise is None or not noise.cheap_restart:
            done.notes.append(NOT_CHEAP)
            return
        session.note(f"{why}: one more block of each side ...")
        if replicate:
            done.notes.append(REPLICATED)
        a_block = await read_a()
        if a_block is None:
            return
        b_block = await read()
        done.again += [a_block, b_block]
        for side, block in (("before", a_block), ("after", b_block)):
            sides[side].append(list(block.samples))
            if not replicate:  # never outvoted: its shift joins the drift term instead
                _leave_out_a_spell(done, side, sides[side], calm, left_out)
        _judge_again(done, sides, noise, service, first)


def _why_read_again(first: Sequence[BaselineRow]) -> str:
    if rests_on_step_time(first):
        return "step time moved at unchanged commit across a restart"
    return "every row too wide to tell across a restart, which is cheap here"


def _next_step(
    rows: Sequence[BaselineRow],
    sides: dict[str, list[Sequence[RequestSample]]],
    *,
    unconfirmed: bool,
) -> tuple[str, bool] | None:
    """Why one more block of each side is read, and whether it is a replicate; None when
    the comparison is reported as it stands.

    A finding the first reading could not tell (read again for being too wide, not for
    a step time that stood out) has had one look more than the first reading's 99%
    allows for: it is read once more, and stands only if that reading keeps it. That
    replicate is never outvoted as a spell: two blocks of a side that agree by chance
    would outvote the one reading that disagrees with them, the very check it is for."""
    if too_wide(rows) and max(len(b) for b in sides.values()) < MAX_BLOCKS:
        return "every row still too wide to tell", False
    if unconfirmed and step_found(rows):
        return ("a finding the first reading could not tell: one more block of each side "
                "before it is reported", True)  # fmt: skip
    return None


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
) -> None:
    """The comparison of each side's kept blocks, pooled, with the shifts between them
    joining the calibration's calm blocks in the drift ("A-B twice")."""
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
    pooled = {side: [s for b in blocks for s in b] for side, blocks in sides.items()}
    done.rows = compare_samples(pooled["before"], pooled["after"], drift=done.drift)
    moved = "; ".join(f"{r.text_type} {r.context} step time {r.step_time_s.change_text()}"
                      for r in first if _step_moved(r)) or "every row too wide to tell"  # fmt: skip
    done.notes = [n for n in done.notes if not n.startswith("first reading")]
    done.notes.append(f"first reading: {moved}; measured again, the rows above pool the "
                      f"blocks kept ({blocks[0]} before, {blocks[1]} after)")  # fmt: skip
