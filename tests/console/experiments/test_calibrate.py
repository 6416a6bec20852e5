"""The noise profile from calibration blocks: the shift across each restart (paired by
passage), the request-to-request spread, the order it picks, and its round trip through
the history (schema version 5)."""

from __future__ import annotations

import math

import pytest

from console.analysis.noise_profile import NoiseProfile
from console.experiments.baseline import choose_order
from console.experiments.calibrate import block_shift, profile_from_blocks
from console.store import RunStore
from tests.console.analysis.test_pairing import requests


def _blocks() -> list[list]:
    # three blocks of the same flags; the second restart came up 5% slower
    return [
        requests({"easy": 2, "hard": 2}, noise=0.0, seed=1),
        requests({"easy": 2, "hard": 2}, noise=0.0, seed=2, t0=50.0),
        requests({"easy": 2, "hard": 2}, noise=0.0, slower=1.05, seed=3, t0=100.0),
    ]


def test_a_profile_measures_each_restarts_shift_and_the_spread() -> None:
    blocks = _blocks()
    assert block_shift(blocks[0], blocks[1]) == pytest.approx((0.0, 0.0), abs=1e-12)
    profile = profile_from_blocks("local", "builtin", "abc", blocks, [12.0, 14.0])
    assert profile.shifts == pytest.approx((0.0, math.log(1.05)))
    assert profile.shift_sd == pytest.approx(math.log(1.05) / math.sqrt(2))
    assert profile.restart_time == 13.0 and profile.order() == "A-B-A-B"  # a cheap restart
    # no noise inside a block: zero spread, one point (code at context 256)
    ((point),) = profile.points
    assert (point.text_type, point.context, point.rel_sd) == ("code", 256, pytest.approx(0.0))
    drift = profile.drift("A-B")
    # the interval carries the drift widened for two shifts (Student's t), not the estimate
    assert profile.drift_sd == pytest.approx(profile.shift_sd * 9.925 / 2.576, rel=1e-4)
    assert drift.measured and drift.term(2.576) == pytest.approx(2.576 * profile.drift_sd)
    assert "calibrated on local" in drift.source and "2 shift(s)" in drift.source
    lines = "\n".join(profile.lines())
    assert "+5.0%" in lines and "the default order is A-B-A-B" in lines


def test_two_processes_side_by_side_give_the_side_by_side_drift_term() -> None:
    blocks = _blocks()
    # the second process of one pair ran 4% slower than the service, the other 1% faster
    a, b = requests({"easy": 2, "hard": 2}, noise=0.0, seed=5), requests(
        {"easy": 2, "hard": 2}, noise=0.0, slower=1.04, seed=6)  # fmt: skip
    c = requests({"easy": 2, "hard": 2}, noise=0.0, slower=0.99, seed=7)
    offsets = [block_shift(a, b), block_shift(a, c)]
    profile = profile_from_blocks("local", "builtin", "abc", blocks, [12.0, 14.0],
                                  offsets=[o for o in offsets if o])  # fmt: skip
    assert profile.process_offsets == pytest.approx((math.log(1.04), math.log(0.99)))
    rms = math.sqrt((math.log(1.04) ** 2 + math.log(0.99) ** 2) / 2)
    side = profile.drift("side-by-side")
    assert side.measured and side.shift_sd == pytest.approx(rms)
    assert side.term(2.576) == pytest.approx(2.576 * rms)
    assert "offset ± " in side.text() and "2 pair(s) of processes" in side.text()
    again = NoiseProfile.from_dict(profile.as_dict())  # kept in history as JSON
    assert again.process_sd == pytest.approx(profile.process_sd)
    assert "two processes with the same flags" in "\n".join(profile.lines())
    # a profile without the pairs (a host that cannot hold two engines) says so
    bare = profile_from_blocks("local", "builtin", "abc", blocks, [12.0, 14.0])
    assert not bare.drift("side-by-side").measured
    assert "no offset between two processes" in bare.drift("side-by-side").text()


def test_noisy_requests_show_their_spread() -> None:
    blocks = [requests({"easy": 4, "hard": 4}, noise=0.05, seed=s, t0=50.0 * s) for s in (1, 2)]
    profile = profile_from_blocks("local", "builtin", "abc", blocks, [600.0])
    assert 0.02 < profile.points[0].rel_sd < 0.09
    assert profile.order() == "A-B"  # a ten-minute restart: no bracketing
    # the shift between two noisy blocks is partly their own request noise, which each
    # comparison's paired interval already holds: the drift is what is left beyond it
    (shift,), (noise,) = profile.shifts, profile.shift_var_noise
    assert noise > 0 and profile.shift_sd == pytest.approx(math.sqrt(max(0, shift**2 - noise)))
    assert profile.shift_sd < abs(shift)


def test_the_order_is_asked_or_follows_the_restart() -> None:
    slow = profile_from_blocks("h", "vllm", "f", _blocks()[:2], [700.0])
    quick = profile_from_blocks("h", "builtin", "f", _blocks()[:2], [9.0])
    assert choose_order(None, None, None) == "A-B"
    assert choose_order(None, None, quick) == "A-B-A-B"
    assert choose_order("auto", None, slow) == "A-B"
    assert choose_order(None, True, slow) == "A-B-A-B"
    assert choose_order("A-B", None, quick) == "A-B"


async def test_profiles_are_stored_by_host_and_flags() -> None:
    store = RunStore()
    try:
        assert await store.noise_profile("local") is None
        old = profile_from_blocks("local", "builtin", "f1", _blocks(), [10.0, 11.0])
        new = NoiseProfile.from_dict({**old.as_dict(), "flags_hash": "f2",
                                      "measured_at": old.measured_at + 5})  # fmt: skip
        await store.add_noise_profile(old)
        await store.add_noise_profile(new)
        got = await store.noise_profile("local", "f1")
        assert got is not None and got.shifts == pytest.approx(old.shifts)
        assert got.points == old.points and got.restart_s == (10.0, 11.0)
        assert (await store.noise_profile("local")).flags_hash == "f2"  # the newest
        assert await store.noise_profile("local", "f3") is None
        assert await store.noise_profile("other") is None
    finally:
        store.close()


def test_the_orders_a_host_offers_put_its_default_first() -> None:
    from types import SimpleNamespace

    from console.config import HostProfile, SSHProfile
    from console.experiments.baseline import available_orders

    here = SimpleNamespace(profile=HostProfile(name="local", engine="builtin"))
    remote = SimpleNamespace(profile=HostProfile(name="gpu", engine="sglang",
                                                 ssh=SSHProfile(destination="gpu")))  # fmt: skip
    quick = profile_from_blocks("h", "builtin", "f", _blocks()[:2], [9.0])
    slow = profile_from_blocks("h", "sglang", "f", _blocks()[:2], [700.0])
    assert available_orders(here, quick) == ["side-by-side", "A-B-A-B", "A-B"]
    assert available_orders(remote, slow) == ["A-B", "A-B-A-B"]
    assert available_orders(remote, None) == ["A-B", "A-B-A-B"]
    assert choose_order(None, None, None, side_by_side=True) == "side-by-side"


def test_side_by_side_starts_b_passive_on_its_own_port_with_the_new_flags() -> None:
    from types import SimpleNamespace

    from console.config import HostProfile, LaunchProfile
    from console.experiments.side_by_side import can_run_side_by_side, second_profile

    a = HostProfile(name="local", engine="builtin", port=30000,
                    launch=LaunchProfile(python="/usr/bin/python3", env={"X": "1"}))  # fmt: skip
    service = SimpleNamespace(profile=a)
    b = second_profile(service, {"port": 30000, "tool-call-parser": "qwen25"}, "/tmp/b")
    assert b.port != a.port and b.state_dir == "/tmp/b" and b.name == "local-side-b"
    assert b.flags == {"tool-call-parser": "qwen25"}  # the port is B's own
    assert b.launch.env == {"X": "1", "OMP_WAIT_POLICY": "PASSIVE"}  # idle B never spins
    assert a.launch.env == {"X": "1"}  # A's profile untouched
    assert can_run_side_by_side(service)
    assert not can_run_side_by_side(
        SimpleNamespace(profile=a.model_copy(update={"engine": "vllm"}))
    )
