"""`history explain ID1 ID2`: the verdict on two stored runs, the model from the newest
sweep over two contexts (never a newer one-context baseline), and runs labelled by kind."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from console.analysis.records import RunInfo, run_kind
from console.experiments.explain import ExplainError, explain_runs
from console.store import RunStore
from tests.console.analysis.test_verdict import requests

REPO = Path(__file__).resolve().parents[3]


async def _run(store: RunStore, method: str, samples, t: float, kind: str = "", **params) -> int:
    info = RunInfo(host="gpu1", engine="builtin", method=method, params=params, flags={},
                   started_at=t, kind=kind)  # fmt: skip
    run_id = await store.start_run(info)
    for s in samples:
        await store.add_request(run_id, s)
    await store.finish_run(run_id, "complete")
    return run_id


async def _fill(store: RunStore) -> dict[str, int]:
    rng = random.Random(3)
    sweep = [s for c in (64, 256, 512, 1024) for k in ("code", "prose")
             for s in requests(k, c, 4, rng=rng)]  # fmt: skip
    ids = {"sweep": await _run(store, "context-sweep", sweep, 1000.0, contexts=[64, 1024])}
    # newer, one context, labelled: must never be the model
    base = [s for k in ("code", "prose") for s in requests(k, 256, 3, rng=rng)]
    ids["baseline"] = await _run(store, "context-sweep", base, 2000.0, kind="baseline")
    ids["short"] = await _run(store, "probe", requests("prose", 64, 6, rng=rng), 3000.0)
    ids["long"] = await _run(store, "probe", requests("prose", 1024, 6, rng=rng), 3100.0)
    slow = requests("prose", 64, 6, rng=rng, slower=1.6)
    ids["slow"] = await _run(store, "probe", slow, 3200.0)
    ids["far"] = await _run(store, "probe", requests("prose", 1900, 4, rng=rng), 3300.0)
    return ids


async def test_explain_two_stored_runs_gives_each_outcome_with_the_sweep_as_model() -> None:
    store = RunStore()
    ids = await _fill(store)
    run = await store.run(ids["baseline"])
    assert run.info.kind == "baseline"
    assert (await store.latest_sweep("gpu1")).id == ids["sweep"]
    assert (await store.latest_sweep("gpu1", text_types=["prose"])).id == ids["sweep"]
    assert await store.latest_sweep("gpu1", text_types=["poetry"]) is None
    assert await store.latest_sweep("gpu1", flags_hash="other") is None

    growth = await explain_runs(store, await store.run(ids["short"]), await store.run(ids["long"]))
    assert growth.model_run == ids["sweep"]
    ((label, judged),) = growth.pairs
    assert judged.outcome == "physics", judged.text()
    assert judged.factor("context").moved and "prose at context 64 -> prose" in label
    assert judged.observed.n == 6 and judged.baseline.n == 6  # both sides resampled

    bug = await explain_runs(store, await store.run(ids["short"]), await store.run(ids["slow"]))
    assert bug.pairs[0][1].outcome == "not physics", bug.pairs[0][1].text()

    far = await explain_runs(store, await store.run(ids["short"]), await store.run(ids["far"]))
    assert far.pairs[0][1].outcome == "not enough evidence"
    assert "specconsole sweep gpu1" in (far.pairs[0][1].offer or "")
    store.close()


async def test_a_run_without_requests_cannot_be_explained() -> None:
    store = RunStore()
    ids = await _fill(store)
    empty = await _run(store, "watch", [], 4000.0)
    with pytest.raises(ExplainError, match="no usable request samples"):
        await explain_runs(store, await store.run(ids["short"]), await store.run(empty))
    store.close()


async def test_the_same_point_twice_needs_no_sweep() -> None:
    store = RunStore()
    rng = random.Random(1)
    a = await _run(store, "probe", requests("prose", 64, 4, rng=rng), 1.0)
    b = await _run(store, "probe", requests("prose", 64, 4, rng=rng), 2.0)
    await _run(store, "context-sweep", requests("prose", 256, 3, rng=rng), 3.0, kind="baseline")
    done = await explain_runs(store, await store.run(a), await store.run(b))
    assert done.model_run is None
    # the same context and text on both sides: no model needed, the decomposition decides
    assert done.pairs[0][1].outcome == "physics", done.pairs[0][1].text()
    assert "no model needed" in done.lines()[0]
    store.close()


def test_history_explain_and_list_on_the_command_line() -> None:
    import asyncio

    async def fill() -> dict[str, int]:
        store = RunStore()
        try:
            return await _fill(store)
        finally:
            store.close()

    ids = asyncio.run(fill())

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "console.cli", "history", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    out = cli("explain", str(ids["short"]), str(ids["long"]), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["model_run"] == ids["sweep"] and data["a"]["kind"] == "prompt"
    assert data["verdicts"][0]["outcome"] == "physics"
    assert {"factors", "reasons", "offer", "observed", "baseline"} <= set(data["verdicts"][0])
    text = cli("explain", str(ids["short"]), str(ids["slow"]))
    assert text.returncode == 0 and "Not physics" in text.stdout
    listed = cli("list", "--kind", "baseline")
    assert listed.returncode == 0 and "KIND" in listed.stdout
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == [str(ids["baseline"])]


def test_runs_stored_before_kinds_are_read_by_method_and_parameters() -> None:
    old = {"contexts": [256], "output_tokens": 96, "text_types": ["code", "prose"], "repeat": 3}
    assert run_kind("context-sweep", old) == "baseline"
    assert run_kind("context-sweep", {**old, "contexts": [64, 256]}) == "sweep"
    assert run_kind("probe", {}) == "prompt" and run_kind("breakeven") == "breakeven"


async def test_a_step_time_regression_on_the_same_passages_is_not_physics() -> None:
    # The case: same flags, context and passages, the engine restarted slower
    # (+27% step time), commit exactly equal. Paired by passage with the host's drift, the
    # verdict is the decomposition, not "not enough evidence: ± 48%".
    from console.analysis.noise_profile import NoiseProfile
    from tests.console.analysis.test_pairing import requests as passages

    store = RunStore()
    # a calibration's five shifts (its default blocks) within 3%
    profile = NoiseProfile(host="gpu1", engine="builtin", flags_hash="x", points=(),
                           shifts=(0.03, -0.02, 0.01, -0.03, 0.02), restart_s=(5.0,))  # fmt: skip
    await store.add_noise_profile(profile)
    counts = {"easy": 3, "hard": 3}
    a = await _run(store, "context-sweep", passages(counts, noise=0.04, seed=1), 1.0)
    # each a block of its own, after A's (their request times say so: `block_order`)
    b = await _run(store, "context-sweep",
                   passages(counts, noise=0.04, seed=2, slower=1.27, t0=100.0), 2.0)  # fmt: skip
    same = await _run(store, "context-sweep", passages(counts, noise=0.04, seed=3, t0=200.0), 3.0)
    done = await explain_runs(store, await store.run(a), await store.run(b))
    ((_label, verdict),) = done.pairs
    assert verdict.outcome == "not physics" and verdict.factor == "step time", verdict.text()
    assert "(the host or the engine got slower)" in verdict.headline
    assert "slow spell of the host" in verdict.text()  # one block a side: it says so
    assert done.drift.measured and "no model needed" in done.lines()[0]
    null = await explain_runs(store, await store.run(a), await store.run(same))
    assert null.pairs[0][1].outcome == "physics", null.pairs[0][1].text()
    store.close()


async def test_two_runs_at_two_points_carry_the_hosts_drift_in_the_residual() -> None:
    # A short and a long prompt, measured at two times: without a calibration the residual
    # rests on request noise alone; with this host's drift stored (shifts of 10%), the
    # same two runs carry it, as typed figures do.
    from console.analysis.noise_profile import NoiseProfile

    store = RunStore()
    ids = await _fill(store)
    short, long = await store.run(ids["short"]), await store.run(ids["long"])
    calm = (await explain_runs(store, short, long)).pairs[0][1]
    await store.add_noise_profile(NoiseProfile(
        host="gpu1", engine="builtin", flags_hash="x", points=(),
        shifts=(0.1, -0.1, 0.1, -0.1, 0.1), restart_s=(5.0,),
    ))  # fmt: skip
    drifting = (await explain_runs(store, short, long)).pairs[0][1]
    width = {k: j.factor("residual").ratio.high / j.factor("residual").ratio.low
             for k, j in (("calm", calm), ("drift", drifting))}  # fmt: skip
    assert width["drift"] > width["calm"] * 1.2, width
    assert drifting.observed.as_dict()["drift_sd"] > 0 == calm.observed.drift_sd
    store.close()
