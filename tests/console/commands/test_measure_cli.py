"""Measurement end to end: the CLI on the real engine (JSON out, history kept, bad input
one sentence), a sweep interrupted with Ctrl-C keeps its samples, and a sweep through a
real sshd that is killed and started again mid-run carries on without losing a sample."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from console.config import HostProfile, SSHProfile, save_profile
from console.measure import methods
from console.measure.session import MeasureSession
from console.service import EngineService
from console.store import RunStore
from tests.console.conftest import engine_service, ssh_profile_for
from tests.console.factories import builtin_profile, start_cli
from tests.console.factories import run_cli as _cli
from tests.console.sshd_restart import RestartableSSHD

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

FLAGS = {"skip-server-warmup": True}


def _profile(name: str, tmp_path: Path, ssh: SSHProfile | None = None) -> HostProfile:
    profile = builtin_profile(name, tmp_path / "state", flags=dict(FLAGS), ssh=ssh)
    save_profile(profile)
    return profile


@pytest.fixture
def local_host(tmp_path: Path) -> Iterator[str]:
    _profile("mlocal", tmp_path)
    try:
        yield "mlocal"
    finally:
        _cli("stop", "mlocal", timeout=60)


def test_measurement_commands_on_a_stopped_engine_are_one_sentence(local_host: str) -> None:
    out = _cli("prompt", local_host, "hello")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "not ready" in out.stderr
    assert f"specconsole start {local_host} --wait" in out.stderr


def test_sweep_json_history_and_refusals(local_host: str, tmp_path: Path) -> None:
    assert _cli("start", local_host, "--wait").returncode == 0
    out = _cli("sweep", local_host, "--contexts", "64,512", "--output", "32", "--text",
               "code,prose", "--repeat", "1", "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)  # --json: nothing but the JSON on stdout
    assert data["status"] == "complete" and len(data["samples"]) == 4
    assert {(p["text_type"], p["context"]) for p in data["points"]} == {
        ("code", 64),
        ("code", 512),
        ("prose", 64),
        ("prose", 512),
    }
    assert data["model"]["step_time_s"]["n"] == 2
    for p in data["points"]:  # pooled per point: tok/s = commit / step exactly
        f = p["pooled"]
        tok, commit, step = (f[k]["value"] for k in ("decode_tok_s", "commit_len", "step_time_s"))
        assert tok == pytest.approx(commit / step, rel=1e-12)
    assert data["figures"]["sample_size"]["max_repeat"] == 1  # --repeat 1: exactly one
    history = json.loads(_cli("history", "list", "--json").stdout)
    assert history[0]["id"] == data["run_id"] and history[0]["status"] == "complete"
    # refused before anything is sent: one sentence, nothing stored
    out = _cli("sweep", local_host, "--contexts", "4k", "--output", "32")
    assert out.returncode == 1 and "context length 2048" in out.stderr
    assert out.stderr.count("\n") == 1
    out = _cli("sweep", local_host, "--contexts", "64", "--text", "poetry")
    assert out.returncode == 1 and "no text type 'poetry'" in out.stderr
    assert len(json.loads(_cli("history", "list", "--json").stdout)) == 1
    # the human form shows the figures with their spread and the fitted model
    out = _cli("prompt", local_host, "--context", "64", "--max-tokens", "16", "--ignore-eos")
    assert out.returncode == 0, out.stderr
    assert "decode " in out.stdout and "(server, not streamed)" in out.stdout
    # the tuning loop: the same baseline before and after a change, side by side
    out = _cli("set", local_host, "speculative-ddtree-budget=4", "--yes", "--baseline",
               "--max-repeat", "4", "--baseline-output", "32")  # fmt: skip
    assert out.returncode == 0, out.stderr
    table = out.stdout[out.stdout.index("which factor moved") :]
    assert "\ncode " in table and "\nprose " in table and "measured side by side" in table
    # stored as baselines (never a verdict's model), with a long context near the limit
    baselines = json.loads(_cli("history", "list", "--kind", "baseline", "--json").stdout)
    assert len(baselines) == 2 and all(r["kind"] == "baseline" for r in baselines)
    assert baselines[0]["params"]["contexts"] == [256, 1792]


def _samples_of_latest_run(db: Path) -> tuple[int, str, int] | None:
    if not db.exists():
        return None
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT id, status FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        (n,) = conn.execute(
            "SELECT COUNT(*) FROM request_samples WHERE run_id = ?", (row[0],)
        ).fetchone()
    return row[0], row[1], n


def test_ctrl_c_mid_sweep_keeps_every_sample_and_marks_the_run_incomplete(
    local_host: str, _isolated_data: Path
) -> None:
    assert _cli("start", local_host, "--wait").returncode == 0
    proc = start_cli("sweep", local_host, "--contexts", "64,128,256", "--output", "32",
                     "--repeat", "50")  # fmt: skip
    db = _isolated_data / "history.sqlite"
    deadline = time.monotonic() + 120
    seen = None
    while time.monotonic() < deadline:
        seen = _samples_of_latest_run(db)
        if seen and seen[2] >= 3:
            break
        time.sleep(0.2)
    assert seen and seen[2] >= 3, seen
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    run_id, status, count = _samples_of_latest_run(db)
    assert run_id == seen[0] and status == "incomplete" and count >= seen[2]


# -- through a real sshd that goes away -----------------------------------------------------


@pytest_asyncio.fixture
async def ssh_service(
    restartable_sshd: RestartableSSHD, tmp_path: Path
) -> AsyncIterator[EngineService]:
    server = restartable_sshd.server
    ssh = ssh_profile_for(server, tmp_path)
    profile = _profile("msweep-ssh", tmp_path, ssh)
    async with engine_service(profile, before_stop=restartable_sshd.start) as svc:
        yield svc


async def test_sweep_through_ssh_survives_sshd_restart(
    ssh_service: EngineService, restartable_sshd: RestartableSSHD, tmp_path: Path
) -> None:
    event = await ssh_service.start(wait=True, timeout=180)
    assert event.state == "ready", event.describe()
    notes: list[str] = []
    store = RunStore(tmp_path / "h.sqlite")
    session = MeasureSession(ssh_service, store=store, on_note=notes.append)
    contexts, repeat = [64, 256], 8
    sweep = asyncio.create_task(
        methods.context_sweep(session, contexts=contexts, output_tokens=48, repeat=repeat)
    )
    taken: list[int] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = await store.runs()
        if runs and (await store.run(runs[0].id)).request_count >= 3:
            taken.append((await store.run(runs[0].id)).request_count)
            break
        await asyncio.sleep(0.1)
    assert taken, "the sweep took no samples through ssh"
    restartable_sshd.stop()
    await asyncio.sleep(3)
    restartable_sshd.start()
    result = await asyncio.wait_for(sweep, 300)
    assert result.status == "complete"
    assert len(result.samples) == len(contexts) * repeat  # nothing lost, nothing skipped
    assert any(s.retried for s in result.samples), "no request was taken again"
    assert any("reconnecting" in n for n in notes) and any("reconnected" in n for n in notes)
    stored = await store.run(result.run_id)
    assert stored.status == "complete" and len(stored.requests) == len(result.samples)
    assert all(s.ok for s in result.samples if not s.retried)


def test_diagnose_without_observed_explains_the_live_series_last_minute(local_host: str) -> None:
    assert _cli("start", local_host, "--wait").returncode == 0
    watch = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "watch", local_host, "--json", "--interval", "1",
         "--duration", "25"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip
    try:
        time.sleep(3)
        sweep = _cli("sweep", local_host, "--contexts", "64,512,1024", "--output", "64",
                     "--text", "code,prose", "--repeat", "2")  # fmt: skip
        assert sweep.returncode == 0, sweep.stderr
    finally:
        out, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    watched = [json.loads(line) for line in out.splitlines()]
    assert any(s["tok_s"] for s in watched)
    out = _cli("diagnose", local_host, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["live"]["n"] > 0 and data["model_from"].startswith("sweep run")
    verdict = data["verdict"]
    assert verdict["observed"]["tok_s"] == pytest.approx(data["live"]["tok_s"])
    assert verdict["outcome"] in ("physics", "not physics", "not enough evidence")
    assert data["model"]["step_time_s"]["slope"] is not None  # the fitted model, as before
    # the arithmetic, or the reason there is none (a refusal has no arithmetic)
    arithmetic = verdict["arithmetic"]
    assert (arithmetic and arithmetic[0].startswith("model at context")) or verdict["reasons"]
    # the human form shows the arithmetic and where the model came from
    out = _cli("diagnose", local_host, "--observed", "100", "--context", "900", "--text", "prose")
    assert out.returncode == 0 and "commit" in out.stdout and "(model from sweep run" in out.stdout
    # a context the stored sweep did not reach: refused, with the sweep to run
    out = _cli("diagnose", local_host, "--observed", "100", "--context", "1900", "--text", "prose")
    assert out.returncode == 0, out.stderr
    assert "outside the swept contexts" in out.stdout
    assert f"to settle it: specconsole sweep {local_host} --contexts 64," in out.stdout
