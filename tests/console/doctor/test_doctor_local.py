"""`doctor` on `local` with the bundled engine and real processes: a ready engine checks
out (its /metrics, spec counters and log read as the console reads them), a plain
`python -m http.server` on the profile's port is named with its pid and the fix, an
orphan engine of ours and a writer's lease (held, then its holder killed) are told apart,
and `--json` and the exit code say the same as the lines."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.config import save_profile
from console.doctor import run_doctor
from console.doctor.findings import Findings
from console.doctor.shared import shared_checks
from console.service import EngineService
from console.service.lease import Holder, Lease
from console.service.port_owner import marker_value
from tests.console.factories import builtin_profile, run_cli

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(240), pytest.mark.asyncio(loop_scope="module")]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the listener exited"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


@contextlib.contextmanager
def _http_server(port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """A plain `python -m http.server` on `port`: someone else's process on the port."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})},
    )  # fmt: skip
    try:
        _wait_listening(port, proc)
        yield proc
    finally:
        proc.kill()
        proc.wait()


async def test_a_ready_builtin_engine_checks_out(started_engine: EngineService) -> None:
    report = await run_doctor(started_engine)
    status = {c.check: c.status for c in report.checks}
    assert not report.failed, report.lines()
    for name in (
        "ssh",
        "service",
        "engine",
        "flag-schema",
        "speculation",
        "metrics",
        "spec-counters",
        "log-format",
        "clock",
        "disk",
        "port",
        "orphan",
        "lease",
    ):
        assert status[name] == "ok", (name, report.by_name(name))  # fmt: skip
    assert report.by_name("engine").detail.startswith("builtin ")
    assert "builtin's own" in report.by_name("metrics").detail
    counters = report.by_name("spec-counters").detail
    assert "specengine:spec_verify_steps_total" in counters
    pid = (await started_engine.status()).pid
    port = report.by_name("port").detail  # the listener is the engine under our wrapper
    assert "is held by our engine (pid " in port and port.endswith(f"pid {pid})")
    assert report.lines()[-1] == report.summary() and report.summary().startswith(
        f"{started_engine.profile.name}: "
    )


async def test_the_json_and_the_exit_code_say_what_the_lines_say(
    started_engine: EngineService,
) -> None:
    save_profile(started_engine.profile)
    name = started_engine.profile.name
    as_json = run_cli("doctor", name, "--json")
    as_lines = run_cli("doctor", name)
    assert as_json.returncode == as_lines.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert all(set(row) == {"check", "status", "detail", "fix"} for row in rows)
    lines = as_lines.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [[r["status"], r["check"]] for r in rows]
    for row in rows:
        assert bool(row["fix"]) == (row["status"] in ("warn", "fail")), row


async def test_a_foreign_http_server_on_the_port_is_named_with_its_pid(tmp_path: Path) -> None:
    profile = builtin_profile("shared-gpu", tmp_path / "state")
    save_profile(profile)
    with _http_server(profile.port) as server:
        done = run_cli("doctor", "shared-gpu")
        as_json = run_cli("doctor", "shared-gpu", "--json")
    assert done.returncode == 1 and as_json.returncode == 1, done.stderr
    port = next(line for line in done.stdout.splitlines() if line.split()[1] == "port")
    assert port.startswith("fail  port")
    assert f"pid {server.pid}: " in port and "http.server" in port
    row = next(r for r in json.loads(as_json.stdout) if r["check"] == "port")
    assert row["status"] == "fail" and f"pid {server.pid}" in row["detail"]
    assert row["fix"].startswith("stop that process or give this profile another port")
    assert "`specconsole set shared-gpu port=N`" in row["fix"]


async def test_an_orphan_of_ours_is_told_from_a_foreign_listener(tmp_path: Path) -> None:
    profile = builtin_profile("orphaned", tmp_path / "state")
    async with EngineService.open(profile) as service:
        files = await service.files()
        marker = dict([marker_value(files.dir).split("=", 1)])  # as our wrapper sets it
        with _http_server(profile.port, marker) as orphan:
            checks = {c.check: c for c in await shared_checks(Findings(service))}
    assert checks["port"].status == "ok"
    assert checks["orphan"].status == "warn"
    assert f"pid {orphan.pid}" in checks["orphan"].detail
    assert checks["orphan"].fix == "`specconsole stop orphaned` ends it"


async def test_a_lease_in_use_and_a_stale_one_after_its_holder_died(tmp_path: Path) -> None:
    profile = builtin_profile("leased", tmp_path / "state")
    async with EngineService.open(profile) as service:
        found = Findings(service)
        free = (await shared_checks(found))[2]
        assert (free.status, free.detail) == ("ok", "free: no change in progress")
        lease = Lease(service.transport, await service.files(), timeout=10)
        async with lease.hold(Holder("alice", "laptop", "specconsole set leased x=1",
                                     "2026-12-06T04:41:07+00:00"), wait=0) as held:  # fmt: skip
            busy = (await shared_checks(found))[2]
            os.kill(held.pid, signal.SIGKILL)  # the holder dies without cleaning up
            deadline = time.monotonic() + 10
            while os.path.exists(f"/proc/{held.pid}/fd/9") and time.monotonic() < deadline:
                time.sleep(0.05)
            stale = (await shared_checks(found))[2]
    assert busy.status == "warn" and "a change is in progress" in busy.detail
    assert "alice@laptop (`specconsole set leased x=1`" in busy.detail
    assert stale.status == "warn" and stale.detail.startswith("stale: ")
    assert f"(pid {held.pid}) is gone" in stale.detail
    assert "the next change takes the lease over" in stale.fix
