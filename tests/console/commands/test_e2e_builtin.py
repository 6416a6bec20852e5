"""End to end on the builtin engine, through `local` and through SSH to localhost:
start, change the draft window, see it in /get_server_info, refuse a bad flag without
restarting, roll back, survive a flag that kills the engine, stop."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from console.config import HostProfile, LaunchProfile, SSHProfile, save_profile
from console.errors import FlagError
from console.service import EngineService, LifecycleEvent
from console.transport import open_transport
from tests.console.conftest import engine_service
from tests.console.factories import run_cli as _cli
from tests.console.sshd import SSHServer
from tests.ports import free_port

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

WINDOW = "speculative-draft-window-size"


def _profile(
    kind: str, tmp_path: Path, tiny_pair: tuple[Path, Path], request: pytest.FixtureRequest
) -> HostProfile:
    target, drafter = tiny_pair
    ssh = None
    if kind == "ssh":
        server: SSHServer = request.getfixturevalue("sshd_server")
        known = tmp_path / "known_hosts"
        known.write_text(server.known_hosts_line())
        ssh = SSHProfile(
            destination="testhost", config=[str(server.ssh_config)], known_hosts=[str(known)],
            identity_file=[str(server.client_key)], use_agent=False,
        )  # fmt: skip
    # Over SSH the warmup generation is skipped to keep the suite short; `local` keeps it.
    flags = {"skip-server-warmup": True} if kind == "ssh" else {}
    return HostProfile(
        name=f"e2e-{kind}",
        flags=flags,
        engine="builtin",
        ssh=ssh,
        launch=LaunchProfile(python=sys.executable),
        port=free_port(),
        model_path=str(target),
        draft_model_path=str(drafter),
        state_dir=str(tmp_path / "state"),
    )


@pytest_asyncio.fixture(params=["local", "ssh"])
async def service(
    request: pytest.FixtureRequest, tmp_path: Path, tiny_pair
) -> AsyncIterator[EngineService]:
    profile = _profile(request.param, tmp_path, tiny_pair, request)
    save_profile(profile)  # for the CLI calls below (isolated config dir)
    async with engine_service(profile) as svc:
        yield svc


async def _window(svc: EngineService) -> int | None:
    info = await svc.server_info()
    assert info is not None, "the engine did not answer /get_server_info"
    return info["speculative_draft_window_size"]


async def test_flag_change_rollback_and_failure_recovery(service: EngineService) -> None:
    subscription = service.events.open()  # every lifecycle event from here on
    host = service.profile.name
    files = await service.files()
    launch_json = Path(files.launch)

    # Start: the profile's flags become the launch config; ready via log and /health.
    event = await service.start(wait=True, timeout=120)
    assert event.state == "ready", event.describe()
    seen: list[LifecycleEvent] = subscription.pending()
    assert [e.state for e in seen][:1] == ["starting"] and seen[-1].state == "ready"
    assert await _window(service) is None

    # Set the draft window with the old spelling: validated, diffed, applied, restarted.
    plan = await service.plan({"speculative-dflash-draft-window-size": "16"})
    assert f"+--{WINDOW} 16" in plan.diff
    result = await service.apply(plan, timeout=120)
    assert result.ok, result.event.describe()
    # the old process is stopped (and says so) before the new one starts
    assert [e.state for e in result.events][:3] == ["stopping", "stopped", "starting"]
    assert await _window(service) == 16
    assert json.loads(Path(files.last_good).read_text())["flags"].get(WINDOW) is None

    # A bad flag is refused: nothing is written and nothing restarts.
    before_pid = (await service.status()).pid
    before_text = launch_json.read_text()
    for bad in ({WINDOW: "4"}, {"speculative-draft-windw-size": "64"}, {"context-length": "99999"}):
        with pytest.raises(FlagError):
            await service.plan(bad)
    status = await service.status()
    assert (status.state, status.pid) == ("ready", before_pid)
    assert launch_json.read_text() == before_text

    if service.profile.ssh is None:
        await _cli_sees_the_same_service(host, launch_json, before_text, service.profile.port)

        # Roll back to the config before the change.
        back = await service.rollback(timeout=120)
        assert back.ok, back.event.describe()
        assert await _window(service) is None

    # A flag the engine rejects at startup: failed, with exit code and the log tail.
    plan = await service.plan({"speculative-draft-model-path": "/nonexistent/drafter"})
    result = await service.apply(plan, timeout=120)
    assert result.event.state == "failed"
    assert result.event.exit_code not in (None, 0)
    assert any("/nonexistent/drafter" in line for line in result.event.log_tail)
    status = await service.status()
    assert status.state == "failed" and status.log_tail

    # Rollback restores the working service (last-good was not overwritten by the failure).
    back = await service.rollback(timeout=120)
    assert back.ok, back.event.describe()
    info = await service.server_info()
    assert info is not None and info["speculative_draft_model_path"] != "/nonexistent/drafter"

    logs = [line async for line in service.logs(grep="fired up")]
    assert logs and all("fired up" in line for line in logs)

    await service.stop()
    assert (await service.status()).state == "stopped"


async def _cli_sees_the_same_service(
    host: str, launch_json: Path, before_text: str, port: int
) -> None:
    cli = _cli("status", host, "--json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["state"] == "ready"
    cli = _cli("set", host, f"{WINDOW}=32", "--dry-run")
    assert cli.returncode == 0 and f"+--{WINDOW} 32" in cli.stdout
    assert launch_json.read_text() == before_text  # dry run wrote nothing
    cli = _cli("set", host, f"{WINDOW}=2", "--yes")
    assert cli.returncode != 0 and "below the draft block size 8" in cli.stderr
    assert cli.stderr.count("\n") == 1 and "Traceback" not in cli.stderr

    # logs --grep keeps only matching lines of the current run.
    cli = _cli("logs", host, "--grep", "ready to roll")
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert lines and all("ready to roll" in ln for ln in lines)

    # logs -f follows new lines: a generation long enough for a decode-log line shows up.
    follower = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "logs", host, "-f", "--grep", "Decode batch"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip
    try:
        body = {
            "text": "def f(x):\n",
            "sampling_params": {"max_new_tokens": 120, "ignore_eos": True},
        }
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            assert http.post("/generate", json=body).status_code == 200
        line = await asyncio.wait_for(asyncio.to_thread(follower.stdout.readline), timeout=60)
        assert "Decode batch, #running-req: 1" in line
    finally:
        follower.kill()
        follower.wait(timeout=10)

    # restart --wait brings the same config back up under a new process.
    pid = json.loads(_cli("status", host, "--json").stdout)["pid"]
    cli = _cli("restart", host, "--wait")
    assert cli.returncode == 0, cli.stderr
    after = json.loads(_cli("status", host, "--json").stdout)
    assert after["state"] == "ready" and after["pid"] != pid
    assert launch_json.read_text() == before_text


async def test_limits_come_from_the_engines_default_weights_when_no_path_is_set(
    tmp_path: Path,
) -> None:
    """The built-in `local` profile names no model paths; the engine then loads its bundled
    weights, so the draft-window check must read the block size from those (found via the
    defaults its --help prints) instead of letting a doomed value through to a restart."""
    profile = HostProfile(
        name="defaults",
        engine="builtin",
        launch=LaunchProfile(python=sys.executable),
        port=free_port(),
        state_dir=str(tmp_path / "state"),
    )
    transport = open_transport(profile)
    try:
        svc = EngineService(profile, transport)
        with pytest.raises(FlagError, match="block size 16"):
            await svc.plan({WINDOW: "4"})
        plan = await svc.plan({WINDOW: "16"})
        assert "--speculative-draft-window-size 16" in plan.diff
    finally:
        await transport.close()
