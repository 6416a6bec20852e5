"""Who listens on a port, read on the host from /proc: a foreign listener named with its
pid and command line, a listener under the recorded pid taken for ours, one carrying our
service's marker but outside the pid file taken for an orphan of ours (which `stop`
ends), and the running argv read under the wrapper. Real processes on this machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.service import EngineService
from console.service.port_owner import end_orphans, marker_value, port_owners
from console.service.running_argv import argv_drift
from console.transport.local import LocalTransport
from tests.console.factories import builtin_profile

pytestmark = pytest.mark.timeout(120)

LISTEN = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
time.sleep(300)
"""


def _listener(port: int, env: dict[str, str] | None = None, *, child: bool = False):
    """A process listening on `port` (with `child`, under an `sh` parent)."""
    argv = [sys.executable, "-c", LISTEN, str(port), "marker-for-test"]
    if child:
        argv = ["sh", "-c", '"$@"; :', "sh", *argv]  # sh waits for it: a parent of the listener
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    assert proc.stdout is not None and proc.stdout.readline() == "listening\n"
    return proc


@pytest.fixture
def port() -> Iterator[int]:
    from tests.ports import free_port

    yield free_port()


async def test_a_foreign_listener_is_named_with_pid_and_command_line(port: int) -> None:
    proc = _listener(port)
    try:
        owners = await port_owners(LocalTransport("gpu1"), port, "/srv/x", None, timeout=10)
        assert [item.pid for item in owners.foreign] == [proc.pid]
        assert owners.ours == [] and owners.orphans == []
        text = owners.foreign_text("gpu1")
        assert text.startswith(f"port {port} on gpu1 is held by another process (pid {proc.pid}: ")
        assert "marker-for-test" in text  # the command line, newlines in it flattened
        free = await port_owners(LocalTransport("gpu1"), port + 1, "/srv/x", None, timeout=10)
        assert free.listeners == ()
    finally:
        proc.kill()
        proc.wait()


async def test_a_listener_under_our_pid_is_ours_and_a_marked_one_elsewhere_an_orphan(
    port: int, tmp_path: Path
) -> None:
    directory = str(tmp_path / "svc")
    parent = _listener(port, {"SPECCONSOLE_SERVICE_DIR": directory}, child=True)
    try:
        transport = LocalTransport("gpu1")
        ours = await port_owners(transport, port, directory, parent.pid, timeout=10)
        assert len(ours.ours) == 1 and ours.ours[0].pid != parent.pid  # a descendant
        assert ours.orphans == [] and ours.foreign == []
        lost = await port_owners(transport, port, directory, None, timeout=10)
        assert len(lost.orphans) == 1 and lost.foreign == []
        other_service = await port_owners(transport, port, directory + "2", None, timeout=10)
        assert len(other_service.foreign) == 1  # another service's engine is not ours
        await end_orphans(transport, lost, timeout=5)
        deadline = time.monotonic() + 10
        while parent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        after = await port_owners(transport, port, directory, None, timeout=10)
        assert after.listeners == ()
    finally:
        parent.kill()
        parent.wait()


async def test_status_names_an_orphan_of_ours_and_stop_ends_it(tmp_path: Path) -> None:
    profile = builtin_profile("orphaned", tmp_path / "state")
    async with EngineService.open(profile) as service:
        files = await service.files()
        orphan = _listener(profile.port, {"SPECCONSOLE_SERVICE_DIR": files.dir})
        try:
            status = await service.status()
            assert status.state == "stopped"
            assert f"an engine of ours that is not in the pid file holds port {profile.port}" in (
                status.port_note
            )
            assert f"pid {orphan.pid}" in status.port_note
            assert "specconsole stop orphaned" in status.port_note
            await service.stop()
            assert orphan.wait(10) is not None
            assert (await service.status()).port_note == ""
        finally:
            orphan.kill()
            orphan.wait()


def test_argv_drift_names_each_flag_that_differs() -> None:
    config = ["py", "-m", "e", "--port", "8", "--budget", "7", "--fast"]
    assert argv_drift(config, config) == ""
    running = ["py", "-m", "e", "--port", "8", "--budget=9", "--window", "64"]
    assert argv_drift(running, config) == (
        "--budget 9 (the config has 7), no --fast (the config has it), "
        "--window 64 (not in the config)"
    )
    assert argv_drift(["py2", "-m", "e"], ["py", "-m", "e"]) == "it runs `py2 -m e`"
    assert marker_value("/s") == "SPECCONSOLE_SERVICE_DIR=/s"
