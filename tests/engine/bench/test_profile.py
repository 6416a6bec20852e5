"""engine.bench.profile: per-phase floors (each round's least over repeats of the same
rounds), and a run on the bundled pair that reports every arm."""

from __future__ import annotations

import json

import torch

from engine.bench.profile import PHASES, main, phase_floor
from engine.decode import Generation, RoundStats


def _gen(verify_ms: list[float], draft_ms: float = 1.0) -> Generation:
    g = Generation(prompt_len=4, tokens=[1] * (3 * len(verify_ms) + 1))
    g.rounds = [RoundStats(3, 4, draft_ms, 0.1, v, 0.2, 8) for v in verify_ms]
    return g


def test_the_floor_takes_each_rounds_least_over_repeats_not_a_whole_runs():
    # A busy machine slowed round 0 of the first run and round 1 of the second: no run is
    # clean, yet every round was clean once.
    floor = phase_floor([_gen([9.0, 2.0]), _gen([2.0, 9.0], draft_ms=0.5)])
    assert floor["verify_ms"] == 2.0 and floor["draft_ms"] == 0.5
    assert floor["step_ms"] == round(sum(floor[p] for p in PHASES), 4) == 2.8
    assert floor["commit_mean"] == 3.0 and floor["tok_s_floor"] == round(3000 / 2.8, 1)


def test_profile_reports_every_arm_per_text_type(capsys):
    threads = torch.get_num_threads()
    try:
        assert main(["--json", "--budgets", "3,15", "--repeat", "2", "--limit", "1",
                     "--max-new-tokens", "24", "--threads", "1"]) == 0  # fmt: skip
    finally:
        torch.set_num_threads(threads)  # the rest of the session keeps its threads
    report = json.loads(capsys.readouterr().out)
    assert report["threads"] == 1
    assert set(report["rounds"]) == {"code", "prose"}
    for arms in report["rounds"].values():
        assert set(arms) == {"ar", "dflash", "ddtree-3", "ddtree-15"}
        assert arms["ar"]["commit_mean"] == 1.0 and arms["ar"]["draft_ms"] == 0.0
        assert 1.0 <= arms["ddtree-3"]["commit_mean"] <= 4.0  # a 3-node tree commits <= 4
        for r in arms.values():
            assert r["verify_ms"] > 0 and r["step_ms"] >= r["verify_ms"]
