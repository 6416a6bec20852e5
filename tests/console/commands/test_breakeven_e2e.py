"""On the real bundled engine: `prompt --json` carries the per-round curve, and
`breakeven` measures both arms, holds its arithmetic on every row, is stored in history
and leaves the engine on exactly the flags it found."""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.config import save_profile
from tests.console.factories import builtin_profile, start_cli
from tests.console.factories import run_cli as _cli

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[str]:
    profile = builtin_profile("belocal", tmp_path / "state")
    save_profile(profile)
    started = _cli("start", "belocal", "--wait")
    assert started.returncode == 0, started.stderr
    try:
        yield "belocal"
    finally:
        _cli("stop", "belocal", timeout=60)


def _flags(host: str) -> dict:
    out = _cli("flags", host, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["current"]


def test_prompt_json_has_the_per_round_curve(host: str) -> None:
    out = _cli("prompt", host, "--context", "200", "--max-tokens", "48", "--json", "--no-store")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    sample, curve = data["samples"][0], data["round_curves"][0]
    assert len(curve["rounds"]) == sample["verify_steps"] > 0
    assert curve["rounds"][0]["context"] == 200
    assert sum(r["commit"] for r in curve["rounds"]) == sample["completion_tokens"] - 1
    assert all(r["step_ms"] > 0 and r["repeated"] is not None for r in curve["rounds"])
    assert curve["windows"] and sum(w["rounds"] for w in curve["windows"]) == len(curve["rounds"])
    text = _cli("prompt", host, "--context", "200", "--max-tokens", "24", "--no-store")
    assert text.returncode == 0 and "per-round curve (" in text.stdout


def test_breakeven_rows_hold_and_the_flags_come_back(host: str) -> None:
    before = _flags(host)
    out = _cli("breakeven", host, "--contexts", "32,160", "--output", "16", "--repeat", "2",
               "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [r["context"] for r in data["rows"]] == [32, 160]
    for r in data["rows"]:
        ar, spec = r["ar_step_ms"]["value"], r["spec_step_ms"]["value"]
        needed, measured = r["needed_commit"]["value"], r["measured_commit"]["value"]
        assert math.isclose(needed, spec / ar)
        assert math.isclose(r["speedup"]["value"], measured / needed)
        assert math.isclose(r["speedup"]["value"], r["spec_tok_s"] / r["ar_tok_s"])
        for key in ("ar_step_ms", "spec_step_ms", "needed_commit", "measured_commit", "speedup"):
            assert r[key]["low"] <= r[key]["value"] <= r[key]["high"]
        assert (r["ar_requests"], r["spec_requests"]) == (2, 2)
    assert data["off_changes"] == {"speculative-algorithm": "NONE"}
    assert data["flags_off"]["speculative-algorithm"] == "NONE"
    # The engine is back on exactly its original flags, and serving.
    assert data["restored"] and data["flags_after"] == before
    assert _flags(host) == before
    status = json.loads(_cli("status", host, "--json").stdout)
    assert status["state"] == "ready" and status["flags"] == before

    stored = json.loads(_cli("history", "show", str(data["run_id"]), "--json").stdout)
    assert stored["method"] == "breakeven" and stored["status"] == "complete"
    assert stored["summary"]["rows"] == data["rows"]
    ar = [s for s in stored["requests"] if s["flags_hash"] == data["ar_flags_hash"]]
    assert len(stored["requests"]) == 8 and len(ar) == 4
    assert all(s["commit_len"] == 1.0 for s in ar)  # one token a step without speculation

    # Ctrl-C while speculation is off: the flags still come back, the run is incomplete.
    interrupted = start_cli("breakeven", host, "--contexts", "32", "--output", "16",
                            "--repeat", "3")  # fmt: skip
    assert interrupted.stderr is not None
    seen = ""
    while "measuring with speculation off" not in seen:
        line = interrupted.stderr.readline()
        assert line, f"breakeven ended before the off arm: {seen}"
        seen += line
    interrupted.send_signal(signal.SIGINT)
    _, rest = interrupted.communicate(timeout=180)
    assert interrupted.returncode == 130, seen + rest
    assert "restoring the original flags" in rest and "interrupted" in rest
    assert _flags(host) == before
    assert json.loads(_cli("status", host, "--json").stdout)["state"] == "ready"
    runs = json.loads(_cli("history", "list", "--json").stdout)
    assert runs[0]["method"] == "breakeven" and runs[0]["status"] == "incomplete"
