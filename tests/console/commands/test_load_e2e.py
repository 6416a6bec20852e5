"""On the real bundled engine: `load` sends N requests at once at every level, with
speculation on and off, pools each level's figures from its own requests, stores the run
and leaves the engine on exactly the flags it found."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.config import save_profile
from tests.console.factories import builtin_profile
from tests.console.factories import run_cli as _cli

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[str]:
    save_profile(builtin_profile("ldlocal", tmp_path / "state"))
    started = _cli("start", "ldlocal", "--wait")
    assert started.returncode == 0, started.stderr
    try:
        yield "ldlocal"
    finally:
        _cli("stop", "ldlocal", timeout=60)


def _flags(host: str) -> dict:
    out = _cli("flags", host, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["current"]


def test_load_measures_both_arms_at_every_level_and_restores_the_flags(host: str) -> None:
    before = _flags(host)
    # at temperature 1, seeded: both arms read each passage at its own seed
    out = _cli("load", host, "--concurrency", "1,3", "--waves", "2", "--output", "16",
               "--context", "64", "--temperature", "1", "--sampling-seed", "3",
               "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [r["concurrency"] for r in data["rows"]] == [1, 3]
    assert data["restored"] and _flags(host) == before
    assert data["params"]["sampling"] == "T=1 seed 3"
    stored = json.loads(_cli("history", "show", str(data["run_id"]), "--json").stdout)
    assert stored["kind"] == "load" and stored["status"] == "complete"
    assert stored["sampling"]["temperature"] == 1.0, stored.get("sampling")
    assert {r["temperature"] for r in stored["requests"]} == {1.0}
    requests = stored["requests"]
    # 2 waves x (1 + 3) requests in each arm, every one tagged with its level and wave
    assert len(requests) == 16
    for row in data["rows"]:
        n = row["concurrency"]
        for arm, flags_hash in (("spec", data["spec_flags_hash"]), ("ar", data["ar_flags_hash"])):
            mine = [r for r in requests if r["flags_hash"] == flags_hash and r["concurrency"] == n]
            assert len(mine) == 2 * n and len({r["wave"] for r in mine}) == 2
            assert len({r["prompt_id"] for r in mine}) == 2 * n  # a passage each
            tokens = sum(r["completion_tokens"] - 1 for r in mine)
            level = row[arm]
            assert math.isclose(level["stream_tok_s"]["value"],
                                tokens / sum(r["decode_time_s"] for r in mine))  # fmt: skip
            for key in ("stream_tok_s", "aggregate_tok_s", "step_ms"):
                assert level[key]["low"] <= level[key]["value"] <= level[key]["high"]
        # the same passages in both arms
        spec_ids = {r["prompt_id"] for r in requests if r["flags_hash"] == data["spec_flags_hash"]}
        ar_ids = {r["prompt_id"] for r in requests if r["flags_hash"] == data["ar_flags_hash"]}
        assert spec_ids == ar_ids
        speedup = row["speedup"]
        assert math.isclose(
            speedup["value"],
            row["spec"]["stream_tok_s"]["value"] / row["ar"]["stream_tok_s"]["value"],
        )
        assert row["spec"]["commit"]["value"] > 1
        assert row["ar"]["commit"] is None or row["ar"]["commit"]["value"] == 1.0
    assert data["breakeven"]["text"].startswith("speculation ")
    # The typed question through the run just stored: one stream's tok/s alone and among
    # 3, the run's own figures, is never a bug; the factor holds their ratio.
    alone, among = (row["spec"]["stream_tok_s"]["value"] for row in data["rows"])
    typed = ("diagnose", host, "--observed", f"{among:.1f}", "--concurrency", "3",
             "--baseline", f"{alone:.1f}", "--json")  # fmt: skip
    greedy = _cli(*typed)  # the run was sampled at T=1: read greedy, it is refused
    assert greedy.returncode == 1 and "measured at T=1 seed 3" in greedy.stderr, greedy.stderr
    asked = _cli(*typed, "--temperature", "1", "--seed", "3")
    assert asked.returncode == 0, asked.stderr
    verdict = json.loads(asked.stdout)["load_verdict"]
    assert verdict["outcome"] != "not physics", verdict["headline"]
    assert verdict["factor"]["low"] <= among / alone <= verdict["factor"]["high"]
    shown = _cli("history", "show", str(data["run_id"]))
    assert shown.returncode == 0
    assert "stops paying" in shown.stdout or "pays at" in shown.stdout
