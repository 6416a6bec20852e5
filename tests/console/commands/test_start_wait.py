"""`specconsole start HOST` follows the engine to ready by default, as an operator
expects of a start; `--no-wait` returns at once and says that it returned while the
engine was still starting (before, a bare `start` returned at "starting" with a hint
that was easy to miss). A profile on this machine with the default state directory
keeps its service state under XDG_STATE_HOME when that is set. On the real bundled
engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.config import DEFAULT_STATE_DIR, save_profile
from tests.console.factories import builtin_profile

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


EXTRA: dict[str, str] = {}  # set for the console's processes, over this test's own env


def _cli(*args: str, timeout: float = 200) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **EXTRA},
    )  # fmt: skip


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # The default state directory, and XDG_STATE_HOME set for the console's processes.
    monkeypatch.setitem(EXTRA, "XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    save_profile(builtin_profile("waits", DEFAULT_STATE_DIR))
    try:
        yield "waits"
    finally:
        _cli("stop", "waits", timeout=60)


def test_start_follows_to_ready_unless_told_not_to(host: str) -> None:
    started = _cli("start", host)
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().endswith(f"{host}: ready"), started.stdout
    assert "ready" in _cli("status", host).stdout
    state = Path(EXTRA["XDG_STATE_HOME"]) / "specconsole" / host
    assert (state / "launch.json").is_file(), sorted(state.parent.rglob("*"))
    assert _cli("stop", host).returncode == 0

    early = _cli("start", host, "--no-wait")
    assert early.returncode == 0, early.stderr
    assert "returned without waiting for ready (--no-wait)" in early.stdout, early.stdout
    assert f"specconsole status {host}" in early.stdout


def test_start_on_a_running_engine_succeeds_with_nothing_to_start(host: str) -> None:
    """`systemctl start` on a running unit: a script's start-then-measure runs twice."""
    assert _cli("start", host).returncode == 0
    pid = json.loads(_cli("status", host, "--json").stdout)["pid"]
    again = _cli("start", host)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"{host}: already running (pid {pid}), ready: nothing to start"
    as_json = _cli("start", host, "--json")
    assert as_json.returncode == 0, as_json.stderr
    outcome = json.loads(as_json.stdout)
    assert outcome["state"] == "ready" and outcome["already_running"] is True, outcome
    assert (outcome["pid"], outcome["restart_pending"]) == (pid, False), outcome
    assert json.loads(_cli("status", host, "--json").stdout)["pid"] == pid  # nothing restarted
