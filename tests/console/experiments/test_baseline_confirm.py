"""A step-time finding across a restart is measured again before it is reported.

Synthetic blocks stand in for the engine's (`run_baseline` is replaced; the service only
applies and rolls back), so the timings are known by construction:
- a slow spell of the host that hit only the after block (the field reports' trap: a
  parser change read as a speed change, here 35% slower at unchanged speed) must not
  come out as a finding: the after side's two blocks disagree, a third agrees with the
  second, and the spell's block is left out;
- a spell that cannot be told apart (every block its own speed) is a wide interval;
- a real regression (every after block 25% slower) must still be reported, confirmed.
All read as findings on the first reading alone, which is what the old code reported.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from console.analysis.noise_profile import NoiseProfile
from console.experiments import baseline, baseline_confirm
from console.experiments.baseline import BaselinePlan, apply_with_baseline
from console.measure.methods import MethodResult
from tests.console.analysis.test_pairing import requests

PLAN = BaselinePlan(contexts=(256,), output=64, text_types=("code",), repeat=3)
COUNTS = {"easy": 4, "hard": 4}  # four rounds of two passages
# A calm host's calibration: five shifts within 2%, a restart of 20 s.
CALM = NoiseProfile("gpu1", "sglang", "abc", (), (0.01, -0.015, 0.02, 0.0, -0.01), (20.0,))


@dataclass
class FakeService:
    """Applies and rolls back at once; counts what it was asked."""

    profile: Any = field(default_factory=lambda: SimpleNamespace(
        name="gpu1", engine="sglang", ssh=None))  # fmt: skip
    calls: list[str] = field(default_factory=list)

    async def apply(self, plan: Any, timeout: float) -> Any:
        self.calls.append("apply")
        return SimpleNamespace(ok=True, event=SimpleNamespace(describe=lambda: "ready"))

    async def rollback(self, timeout: float) -> Any:
        self.calls.append("rollback")
        return SimpleNamespace(ok=True, event=SimpleNamespace(describe=lambda: "ready"))


def _scripted(monkeypatch: pytest.MonkeyPatch, slow: list[float], noise: float = 0.01,
              noisy: dict[int, float] | None = None) -> list[int]:  # fmt: skip
    """`run_baseline` returns blocks whose step time is `slow[i]` x the engine's, in call
    order, each request off by `noise` (`noisy[i]` for block i); returns the list of
    calls made."""
    calls: list[int] = []

    async def fake(session: Any, plan: Any = None, **kw: Any) -> MethodResult:
        i = len(calls)
        calls.append(i)
        sd = (noisy or {}).get(i, noise)
        samples = requests(COUNTS, slower=slow[i], noise=sd, seed=10 + i, t0=100.0 * i)
        sizes = {"points": [{"text_type": "code", "context": 256, "rounds": 4}]}
        return MethodResult("context-sweep", i, samples, [], figures={"sample_size": sizes})

    monkeypatch.setattr(baseline, "run_baseline", fake)
    monkeypatch.setattr(baseline_confirm, "run_baseline", fake)
    return calls


async def _apply(order: str, service: FakeService) -> baseline.BaselineApply:
    return await apply_with_baseline(service, object(), timeout=60, baseline=PLAN,
                                     order=order, noise=CALM)  # fmt: skip


def _outcome(done: baseline.BaselineApply) -> str:
    """The verdict on the one row these comparisons have."""
    (row,) = done.rows
    assert row.verdict is not None
    return row.verdict.outcome


async def _apply_with_a_slow_restart(shifts: tuple[float, ...]) -> baseline.BaselineApply:
    """A-B on a host with these calibrated shifts whose restart takes ten minutes."""
    slow = NoiseProfile("gpu1", "sglang", "abc", (), shifts, (600.0,))
    return await apply_with_baseline(FakeService(), object(), timeout=60, baseline=PLAN,
                                     order="A-B", noise=slow)  # fmt: skip


# Block speeds in call order. A-B: A, B, then (confirming) A, B, and a third B where the
# after side's two disagree. A-B-A-B: A's first half, B, A's second half, then the same.
SPELL_IN_B = {"A-B": [1.0, 1.35, 1.0, 1.0, 1.0], "A-B-A-B": [1.0, 1.35, 1.0, 1.0, 1.0, 1.0]}
REGRESSION = {"A-B": [1.0, 1.25, 1.0, 1.25], "A-B-A-B": [1.0, 1.25, 1.0, 1.0, 1.25]}
# ... then, every row still too wide, one more block of each side (A, B) until a side has
# four: here every after block its own speed, so the fourth still cannot tell.
NO_TELLING = {"A-B": [1.0, 1.35, 1.0, 1.0, 1.6, 1.0, 1.25],
              "A-B-A-B": [1.0, 1.35, 1.0, 1.0, 1.0, 1.6, 1.0, 1.25]}  # fmt: skip


@pytest.mark.asyncio
@pytest.mark.parametrize("order", ["A-B", "A-B-A-B"])
async def test_a_slow_spell_in_one_block_is_left_out_not_reported(
    monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    calls = _scripted(monkeypatch, SPELL_IN_B[order])
    service = FakeService()
    done = await _apply(order, service)
    assert len(calls) == len(SPELL_IN_B[order]) and len(done.again) == 3  # A, B, B
    first = [n for n in done.notes if n.startswith("first reading")]
    assert first and "step time +3" in first[0]  # what the old code reported as the answer
    left = [n for n in done.notes if n.startswith("left out")]
    assert left and "the after side's block 1 of 3" in left[0] and "+35%" in left[0], left
    (row,) = done.rows
    assert not row.step_time_s.finding and not row.decode_tok_s.finding, row.moved
    assert row.verdict is not None and row.verdict.outcome == "physics", row.verdict.text()
    assert done.drift.order == "A-B twice" and "this comparison's own shifts" in done.drift.source
    assert service.calls[-1] == "apply"  # the change is what the service runs at the end


@pytest.mark.asyncio
@pytest.mark.parametrize("order", ["A-B", "A-B-A-B"])
async def test_blocks_that_cannot_be_told_apart_give_a_wide_interval(
    monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    calls = _scripted(monkeypatch, NO_TELLING[order])
    done = await _apply(order, FakeService())
    assert len(calls) == len(NO_TELLING[order])  # up to four blocks a side, no more
    assert not [n for n in done.notes if n.startswith("left out")]  # no two of three agree
    (row,) = done.rows
    assert not row.step_time_s.finding, row.moved
    assert row.verdict is not None and row.verdict.outcome == "not enough evidence"
    assert done.drift.term() > 0.2  # the side's own disagreeing blocks are in the drift


@pytest.mark.asyncio
@pytest.mark.parametrize("order", ["A-B", "A-B-A-B"])
async def test_a_real_step_time_regression_is_confirmed(
    monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    calls = _scripted(monkeypatch, REGRESSION[order])
    done = await _apply(order, FakeService())
    assert len(calls) == len(REGRESSION[order]) and len(done.again) == 2  # no third block
    (row,) = done.rows
    assert row.step_time_s.finding and row.decode_tok_s.finding
    assert row.step_time_s.change.ratio == pytest.approx(1.25, rel=0.02)
    assert row.verdict is not None and row.verdict.outcome == "not physics"
    # both sides pool two blocks of 8 (the fake's A-B-A-B halves are whole blocks: three)
    assert (row.n_before, row.n_after) == ((16, 16) if order == "A-B" else (24, 16))
    assert done.drift.term() < 0.15  # a calm host and two agreeing blocks a side
    assert "measured A-B twice" in done.drift.text()


@pytest.mark.asyncio
async def test_no_finding_is_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [1.0, 1.01, 1.0, 1.0])
    service = FakeService()
    done = await _apply("A-B", service)
    assert len(calls) == 2 and not done.again and service.calls == ["apply"]
    assert done.drift.order == "A-B"


def test_the_drift_widens_with_fewer_shifts() -> None:
    # The same spread of shifts, measured two and ten times: the estimate is equal, the
    # drift a comparison carries is wider from two (Student's t, 99%, on their count).
    two = NoiseProfile("h", "builtin", "f", (), (0.03, -0.03), ())
    ten = NoiseProfile("h", "builtin", "f", (), (0.03, -0.03) * 5, ())
    assert two.shift_sd == pytest.approx(ten.shift_sd) == pytest.approx(0.03)
    assert two.drift_sd == pytest.approx(0.03 * 9.925 / 2.576, rel=1e-3)
    assert ten.drift_sd == pytest.approx(0.03 * 3.169 / 2.576, rel=1e-3)
    assert two.drift("A-B").shift_sd == two.drift_sd  # what an A-B interval carries
    # side by side keeps the point estimate of the two processes' offset
    pair = NoiseProfile("h", "builtin", "f", (), (), (), process_offsets=(0.02, -0.02))
    assert pair.drift("side-by-side").shift_sd == pytest.approx(0.02)


def test_one_noisy_shift_takes_off_only_its_own_noise() -> None:
    # Four calm shifts of 3% with little noise, and one from a block a spell made noisy
    # (its requests 40% apart): the old estimate took that block's noise off all five
    # and read no drift at all.
    profile = NoiseProfile("h", "builtin", "f", (), (0.03, -0.03, 0.03, -0.03, 0.13), (),
                           shift_var_noise=(1e-4,) * 4 + (0.05,))  # fmt: skip
    calm = math.sqrt((4 * (0.03**2 - 1e-4) + 0) / 5)
    assert profile.shift_sd == pytest.approx(calm, rel=1e-6) and profile.shift_sd > 0.02


def _offsets_to_shifts(offsets: list[float]) -> tuple[float, ...]:
    return tuple(math.log(b / a) for a, b in itertools.pairwise(offsets))


# Six calibration blocks; the fourth ran 35% slow (a slow spell), the rest within 1.5%.
SPELLY = NoiseProfile("gpu1", "sglang", "abc", (),
                      _offsets_to_shifts([1.0, 1.01, 0.995, 1.35, 1.005, 0.99]), (20.0,),
                      shift_var_noise=(1e-4,) * 5)  # fmt: skip


def test_a_calibration_block_a_spell_hit_is_named_and_left_out_of_the_calm_drift() -> None:
    assert SPELLY.spell_blocks == (3,)
    assert SPELLY.shift_sd > 0.15  # every shift counted: what a single block carries
    calm = SPELLY.calm()
    assert len(calm.shifts) == 4 and calm.shift_sd < 0.02
    assert "a slow spell of the host: block 4 +3" in "\n".join(SPELLY.lines())
    assert CALM.spell_blocks == () and CALM.calm() is CALM  # nothing stands out
    # a block that ran 35% *faster* is the host's drift, not a spell: it stays in
    fast = dataclasses.replace(SPELLY, shifts=_offsets_to_shifts([1.0, 1.01, 0.995, 0.65,
                                                                  1.005, 0.99]))  # fmt: skip
    assert fast.spell_blocks == () and fast.calm() is fast and fast.shift_sd > 0.15


@pytest.mark.asyncio
async def test_a_block_faster_than_its_sides_other_two_is_not_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No change; the before side's first and third blocks agree 8% slower than its
    second and than both after blocks. The old code left the second out as a spell and
    reported the after side 8% faster (the parsers A-B false alarm in `bench verdict`);
    a spell slows the host, so a faster block is its drift and stays in."""
    # A, B (8% faster: moved), A again, B again; the before side's two disagree, a third A
    calls = _scripted(monkeypatch, [1.0, 0.92, 0.92, 0.92, 1.0])
    done = await _apply("A-B", FakeService())
    assert len(calls) == 5, done.notes
    assert not [n for n in done.notes if n.startswith("left out")], done.notes
    (row,) = done.rows
    assert row.verdict is not None and row.verdict.outcome != "not physics", row.verdict.text()


@pytest.mark.asyncio
async def test_a_confirmed_regression_carries_the_calm_drift_not_the_spell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With the spell in the drift, a 20% regression is too wide to tell on A-B; read twice,
    # with both sides' blocks agreeing, the comparison carries the calm blocks' drift.
    _scripted(monkeypatch, [1.0, 1.2, 1.0, 1.2])
    done = await apply_with_baseline(FakeService(), object(), timeout=60, baseline=PLAN,
                                     order="A-B", noise=SPELLY)  # fmt: skip
    (row,) = done.rows
    assert row.step_time_s.finding and row.verdict.outcome == "not physics", row.moved
    assert SPELLY.drift("A-B").term() > 0.3 > done.drift.term()


# A drifty host (a shared VM): five shifts of 9-12% with unchanged flags, a 5 s restart.
DRIFTY = NoiseProfile("vm", "builtin", "abc", (), (0.10, -0.12, 0.09, -0.11, 0.12), (5.0,))
# A real 25% step-time regression, each block 1-3% off its side's speed: A, B, A, B, then
# one more A and B at a time (up to four blocks a side).
DRIFTY_REGRESSION = [1.0, 1.25 * 1.03, 1.03, 1.25 * 0.98, 0.98, 1.25 * 1.02, 1.01, 1.25 * 0.99]


@pytest.mark.asyncio
async def test_on_a_drifty_host_more_blocks_of_each_side_decide_a_real_regression(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two blocks a side leave a 25% regression too wide to tell under this host's drift
    (the old code stopped there: "not enough evidence"); more blocks of each side shrink
    the drift term (1/a + 1/b) / 2 until it is a finding."""
    calls = _scripted(monkeypatch, DRIFTY_REGRESSION)
    done = await apply_with_baseline(FakeService(), object(), timeout=60, baseline=PLAN,
                                     order="A-B", noise=DRIFTY)  # fmt: skip
    assert done.drift.blocks is not None
    a, b = done.drift.blocks
    assert a == b >= 3 and len(calls) == a + b  # read on past two a side, stopped when decided
    (row,) = done.rows
    assert row.step_time_s.finding and row.verdict is not None
    assert row.verdict.outcome == "not physics", row.verdict.text()
    assert row.step_time_s.change.ratio == pytest.approx(1.25, rel=0.03)
    assert done.drift.order == "A-B repeated" and done.drift.share == pytest.approx(1 / a)
    assert f"{a} blocks before, {b} after" in done.drift.text()


@pytest.mark.asyncio
async def test_a_slow_restart_is_not_repeated_and_says_what_would_narrow_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _scripted(monkeypatch, DRIFTY_REGRESSION)
    done = await _apply_with_a_slow_restart(DRIFTY.shifts)
    assert len(calls) == 4  # A, B, then A and B once more: no third pair of restarts
    assert any("not measured cheap" in n for n in done.notes), done.notes
    assert _outcome(done) == "not enough evidence"


@pytest.mark.asyncio
async def test_a_first_reading_too_wide_on_every_row_is_read_again_where_a_restart_is_cheap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spell inside the after block widens that block's own timing noise until a 25%
    regression no longer stands out of it: every row "too wide to tell", and the old
    code reported that at once (a -18% round slowdown on a calm host, `bench verdict`).
    With a cheap restart it is read again, and again while the second look (strict: an
    early look spends little of the 1%) still cannot tell; the third shows it."""
    calls = _scripted(monkeypatch, REGRESSION["A-B"] * 2 + [1.0, 1.25], noisy={1: 0.4})
    done = await _apply("A-B", FakeService())
    assert len(calls) == 6, done.notes  # A, B, then A and B again, and once more
    (row,) = done.rows
    assert row.step_time_s.change.ratio == pytest.approx(1.25, rel=0.05)
    assert row.verdict is not None and row.verdict.outcome == "not physics", row.verdict.text()
    first = [n for n in done.notes if n.startswith("first reading")]
    assert first and first[0].startswith("first reading: every row too wide to tell")
    # where the restart is not measured cheap, the first reading is what is reported
    calls = _scripted(monkeypatch, REGRESSION["A-B"], noisy={1: 0.4})
    done = await _apply_with_a_slow_restart(CALM.shifts)
    assert len(calls) == 2 and not done.again
    assert _outcome(done) == "not enough evidence"


@pytest.mark.asyncio
async def test_a_finding_a_later_look_shows_stands_only_at_that_looks_spent_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No change, and a first reading too wide to tell (a spell inside the after block's
    timing); read again, the after side's two blocks happen to agree 15% slower than the
    before side's two: at the same 99% every look the old code called that a finding (the
    parser change's "step time +21% [+3%…+43%]" in `bench verdict`). At the second look's
    share of the 1% it is not one, so it reads on, and the blocks after it read the after
    side at the before side's speed: no finding. No replicate block is needed: the
    spending pays for every look."""
    calls = _scripted(monkeypatch, [1.0, 1.15, 1.0, 1.15] + [1.0] * 4, noisy={1: 0.4})
    done = await _apply("A-B", FakeService())
    assert len(calls) == 8, done.notes  # too wide to tell: up to four a side
    assert not [n for n in done.notes if n.startswith("left out")], done.notes
    (row,) = done.rows
    assert not row.step_time_s.finding, row.moved
    assert row.verdict is not None and row.verdict.outcome != "not physics", row.verdict.text()
    # the same blocks, the third pair agreeing: a finding at the third look, which stops
    calls = _scripted(monkeypatch, [1.0, 1.15, 1.0, 1.15, 1.0, 1.15] + [1.0, 1.15], noisy={1: 0.4})
    done = await _apply("A-B", FakeService())
    assert len(calls) == 6, done.notes
    (row,) = done.rows
    assert row.step_time_s.finding and row.verdict is not None
    assert row.verdict.outcome == "not physics", row.verdict.text()
