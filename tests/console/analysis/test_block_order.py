"""Which order two runs were measured in, from their requests' times: side by side when
they alternate (the pair's order flips each round), two blocks otherwise."""

from __future__ import annotations

import dataclasses

from console.analysis.block_order import interleaved, measured_order, stretches
from tests.console.analysis.test_intervals import BASE


def _at(*times: float) -> list:
    return [dataclasses.replace(BASE, t=t) for t in times]


def test_requests_read_alternately_are_side_by_side_and_blocks_are_not() -> None:
    # side by side: 2 points x 2 passages a round, A first in round 1, B first in round 2
    a = _at(1, 3, 5, 7, 10, 12, 14, 16)
    b = _at(2, 4, 6, 8, 9, 11, 13, 15)
    assert stretches(a, b) == 15 and measured_order(a, b) == "side-by-side"
    blocks = (_at(*range(1, 9)), _at(*range(20, 28)))
    assert stretches(*blocks) == 2 and measured_order(*blocks) == "A-B"
    bracket = (_at(1, 2, 3, 4, 13, 14, 15, 16), _at(5, 6, 7, 8, 17, 18, 19, 20))
    assert stretches(*bracket) == 4 and measured_order(*bracket) == "A-B"  # the cautious read
    assert not interleaved(_at(1), _at(2))  # one request a side tells nothing


async def test_explain_reads_side_by_side_runs_with_the_process_offset_not_the_hosts_drift() -> (
    None
):
    # The same +27% step-time regression twice: as two blocks on a host whose shifts run
    # 10-15% it is too wide to tell; read alternately (what `set --baseline` stores side by
    # side) the host's drift cancels, and the two processes' measured offset is what is left.
    from console.analysis.noise_profile import NoiseProfile
    from console.experiments.explain import explain_runs
    from console.store import RunStore
    from tests.console.analysis.test_pairing import requests as passages
    from tests.console.experiments.test_explain import _run

    store = RunStore()
    await store.add_noise_profile(NoiseProfile(
        host="gpu1", engine="builtin", flags_hash="x", points=(),
        shifts=(0.15, -0.1, 0.12, -0.14, 0.1), restart_s=(5.0,),
        process_offsets=(0.01, -0.015),
    ))  # fmt: skip
    counts = {"easy": 4, "hard": 4}
    a = await _run(store, "context-sweep", passages(counts, noise=0.04, seed=1), 1.0)
    later = passages(counts, noise=0.04, seed=2, slower=1.27, t0=100.0)
    beside = [dataclasses.replace(s, t=s.t - 100.5) for s in later]  # between A's requests
    b_later = await _run(store, "context-sweep", later, 2.0)
    b_beside = await _run(store, "context-sweep", beside, 2.0)
    apart = await explain_runs(store, await store.run(a), await store.run(b_later))
    together = await explain_runs(store, await store.run(a), await store.run(b_beside))
    assert apart.drift.order == "A-B" and together.drift.order == "side-by-side"
    assert apart.pairs[0][1].outcome == "not enough evidence", apart.pairs[0][1].text()
    verdict = together.pairs[0][1]
    assert verdict.outcome == "not physics" and verdict.factor == "step time", verdict.text()
    assert "side by side" in verdict.text() and "slow spell" not in verdict.text()
    store.close()
