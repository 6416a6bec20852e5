"""The engine that answers is the one we launched, on the real bundled engine through the
CLI: an engine started by hand on the profile's port is named by `status` (pid, command
line), `start` refuses with them and nothing reports "ready", `stop` leaves it alone; and
`status` tells a launch config written without its restart from the running engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from console.config import save_profile
from console.service.launch import LaunchConfig
from tests.console.factories import builtin_profile, run_cli

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def _wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the hand-started engine exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail("the hand-started engine did not become healthy")


def test_a_foreign_engine_on_the_port_is_named_and_refused(tmp_path: Path) -> None:
    profile = builtin_profile("foreign", tmp_path / "state")
    save_profile(profile)
    by_hand = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "serve", "--port", str(profile.port),
         "--skip-server-warmup"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy(),
    )  # fmt: skip
    try:
        _wait_healthy(profile.port, by_hand)
        named = f"port {profile.port} on foreign is held by another process (pid {by_hand.pid}: "
        status = run_cli("status", "foreign")
        assert status.returncode == 0, status.stderr
        assert status.stdout.startswith("foreign: stopped"), status.stdout
        assert named in status.stdout and "engine.cli serve --port" in status.stdout

        start = run_cli("start", "foreign", "--timeout", "60")
        assert start.returncode == 1, start.stdout + start.stderr
        assert named in start.stderr and "engine.cli serve --port" in start.stderr
        assert "stop that process or give this profile another port" in start.stderr
        assert "ready" not in start.stdout + start.stderr

        after = json.loads(run_cli("status", "foreign", "--json").stdout)
        assert after["state"] == "stopped" and after["pid"] is None
        assert run_cli("stop", "foreign").returncode == 0
        assert by_hand.poll() is None  # not ours: never stopped by us
    finally:
        by_hand.kill()
        by_hand.wait()


def test_status_tells_the_launch_config_from_the_running_engine(tmp_path: Path) -> None:
    profile = builtin_profile("drift", tmp_path / "state")
    save_profile(profile)
    try:
        assert run_cli("start", "drift").returncode == 0
        calm = json.loads(run_cli("status", "drift", "--json").stdout)
        assert calm["state"] == "ready" and calm["drift"] == ""
        assert calm["running_argv"] == calm["argv"]

        # A launch config written and never restarted (a console killed in between).
        launch = tmp_path / "state" / "drift" / "launch.json"
        config = LaunchConfig.from_json(launch.read_text(), "launch.json")
        changed = LaunchConfig(
            config.engine, {**config.flags, "speculative-ddtree-budget": 7},
            [*config.argv, "--speculative-ddtree-budget", "7"],
        )  # fmt: skip
        launch.write_text(changed.to_json())
        drifted = run_cli("status", "drift")
        assert (
            "warning: the running engine differs from its config: no "
            "--speculative-ddtree-budget (the config has 7); `specconsole restart drift` runs "
            "the config"
        ) in drifted.stdout, drifted.stdout
        assert f"launch config revision {changed.id}" in drifted.stdout

        assert run_cli("restart", "drift").returncode == 0
        healed = json.loads(run_cli("status", "drift", "--json").stdout)
        assert healed["drift"] == "" and "7" in healed["running_argv"]
    finally:
        run_cli("stop", "drift", timeout=60)
