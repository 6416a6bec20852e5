"""The `process` supervisor on a trivial long-running script, locally and over SSH."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from console.backends import get_backend
from console.errors import ServiceError
from console.service.follow import follow_until_settled
from console.service.launch import LaunchConfig, ServiceFiles
from console.service.lifecycle import Lifecycle
from console.service.process_supervisor import ProcessSupervisor
from console.transport import LocalTransport, SSHOptions, SSHTransport, Transport

pytestmark = pytest.mark.timeout(120)

SLEEPER = "import time; print('hello', flush=True); time.sleep(600)"
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(600)"
)
CRASHER = "import sys; print('bad flag: --x', file=sys.stderr); sys.exit(3)"
FAKE_ENGINE = """
import sys, time
for i, pct in enumerate((0, 50, 100)):
    print(f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {i}/2 [00:00<00:00]",
          flush=True)
    time.sleep(0.2)
print("[2026-01-01 00:00:00] The server is fired up and ready to roll!", flush=True)
time.sleep(600)
"""


def _py(code: str) -> LaunchConfig:
    return LaunchConfig("builtin", {}, [sys.executable, "-c", code])


@pytest_asyncio.fixture(params=["local", "ssh"])
async def transport(request: pytest.FixtureRequest) -> AsyncIterator[Transport]:
    if request.param == "local":
        t: Transport = LocalTransport()
    else:
        t = SSHTransport(request.getfixturevalue("ssh_options"))
    yield t
    await t.close()


@pytest_asyncio.fixture
async def supervisor(transport: Transport, tmp_path: Path) -> AsyncIterator[ProcessSupervisor]:
    sup = ProcessSupervisor(transport, ServiceFiles(str(tmp_path / "state" / "svc")))
    yield sup
    await sup.stop(timeout=2)


async def test_start_state_logs_stop(supervisor: ProcessSupervisor, tmp_path: Path) -> None:
    assert (await supervisor.state()).state == "stopped"
    await supervisor.start(_py(SLEEPER))
    state = await supervisor.state()
    assert state.state == "running" and state.pid is not None
    assert (tmp_path / "state" / "svc" / "pid").read_text().strip() == str(state.pid)
    lines = []
    async for line in supervisor.follow_logs(backlog=None):
        lines.append(line)
        break
    assert lines == ["hello"]
    with pytest.raises(ServiceError, match="already running"):
        await supervisor.start(_py(SLEEPER))
    await supervisor.stop(timeout=5)
    assert (await supervisor.state()).state == "stopped"
    assert (
        not Path(f"/proc/{state.pid}").exists()
        or "Z" in Path(f"/proc/{state.pid}/stat").read_text().split(") ")[1][:1]
    )


async def test_service_outlives_the_console_connection(
    supervisor: ProcessSupervisor, transport: Transport
) -> None:
    await supervisor.start(_py(SLEEPER))
    pid = (await supervisor.state()).pid
    await transport.close()  # the console goes away (for SSH: the session ends)
    reconnected = (
        type(transport)(transport.options)
        if isinstance(transport, SSHTransport)
        else LocalTransport()
    )
    again = ProcessSupervisor(reconnected, supervisor.files)
    state = await again.state()
    assert (state.state, state.pid) == ("running", pid)
    await again.stop(timeout=5)
    await again.transport.close()


async def test_sigkill_after_timeout_when_sigterm_is_ignored(supervisor: ProcessSupervisor) -> None:
    await supervisor.start(_py(STUBBORN))
    async for line in supervisor.follow_logs(backlog=None):
        assert line == "up"  # the handler is installed before we send SIGTERM
        break
    await supervisor.stop(timeout=0.5)
    assert (await supervisor.state()).state == "stopped"


async def test_crash_is_exited_with_code_and_log(supervisor: ProcessSupervisor) -> None:
    await supervisor.start(_py(SLEEPER))
    async for _ in supervisor.follow_logs(backlog=None):
        break  # "hello" is in the first run's log
    await supervisor.stop()
    await supervisor.start(_py(CRASHER))
    lifecycle = Lifecycle(get_backend("builtin").parse_log)
    lifecycle.starting()
    event = await follow_until_settled(lifecycle, supervisor, None, timeout=30, poll=0.1)
    assert (event.state, event.exit_code) == ("failed", 3)
    assert event.log_tail == ("bad flag: --x",)  # this run's log only; the last one rotated
    assert (await supervisor.state()).exit_code == 3
    rotated = Path(supervisor.files.log + ".1")
    if rotated.exists():  # same machine for both transports here
        assert "hello" in rotated.read_text()


async def test_follow_reports_loading_percent_then_ready(supervisor: ProcessSupervisor) -> None:
    await supervisor.start(_py(FAKE_ENGINE))
    lifecycle = Lifecycle(get_backend("builtin").parse_log)
    lifecycle.starting()
    event = await follow_until_settled(lifecycle, supervisor, None, timeout=30, poll=0.1)
    assert event.state == "ready"
    steps = [(e.state, e.percent) for e in lifecycle.history]
    assert steps[:2] == [("stopped", None), ("starting", None)] and steps[-1] == ("ready", None)
    assert ("loading", 100) in steps


async def test_not_ready_in_time_is_failed_but_left_running(supervisor: ProcessSupervisor) -> None:
    await supervisor.start(_py(SLEEPER))
    lifecycle = Lifecycle(get_backend("builtin").parse_log)
    lifecycle.starting()
    event = await follow_until_settled(lifecycle, supervisor, None, timeout=0.5, poll=0.1)
    assert event.state == "failed" and "not ready after 0.5 s" in event.message
    assert (await supervisor.state()).state == "running"


def test_options_type_is_reused(ssh_options: SSHOptions) -> None:
    # (keeps the fixture graph honest: the SSH param really uses the sshd fixture)
    assert ssh_options.destination == "testhost"
