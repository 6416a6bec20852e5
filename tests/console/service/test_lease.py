"""The writer's lease on a service, on this machine's real `sh` and `flock`: the holder
named in one sentence, a second writer refused at once or waiting (with a progress line
naming the holder) until the first lets go, a holder that died (SIGKILL, no clean-up)
taken over with a note naming it, and EngineService's changes taking the lease."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.errors import ServiceError
from console.service import EngineService
from console.service.launch import ServiceFiles
from console.service.lease import Holder, Lease
from console.transport.local import LocalTransport
from tests.console.factories import builtin_profile

pytestmark = pytest.mark.timeout(60)


def _lease(directory: Path) -> Lease:
    return Lease(LocalTransport("gpu1"), ServiceFiles(str(directory)), timeout=10)


def _holder(command: str, action: str = "apply") -> Holder:
    return Holder("alice", "laptop", command, "2026-12-06T04:41:07+00:00", action)


async def test_a_second_writer_is_refused_at_once_with_the_holders_name(tmp_path: Path) -> None:
    first = _lease(tmp_path)
    async with first.hold(_holder("specconsole set gpu1 a=1 --yes"), wait=0) as held:
        record = json.loads((tmp_path / "lease.holder").read_text())
        assert record["pid"] == held.pid and record["user"] == "alice"
        assert os.path.exists(f"/proc/{held.pid}")  # a process on the host holds it
        t0 = time.monotonic()
        with pytest.raises(ServiceError) as refused:
            async with _lease(tmp_path).hold(_holder("other"), wait=0):
                pytest.fail("two writers held the lease at once")
        assert time.monotonic() - t0 < 5
        text = str(refused.value)
        assert "alice@laptop (`specconsole set gpu1 a=1 --yes`, since 04:41:07 UTC)" in text
        assert "--wait-lock 0" in text and text.count(". ") == 0  # one sentence
    assert not (tmp_path / "lease.holder").exists()  # released cleanly: no holder named


async def test_a_waiting_writer_names_the_holder_and_gets_it_when_released(
    tmp_path: Path,
) -> None:
    notes: list[str] = []
    order: list[str] = []
    first = _lease(tmp_path)

    async def second() -> None:
        async with _lease(tmp_path).hold(_holder("second"), wait=20, on_note=notes.append):
            order.append("second holds")

    async with first.hold(_holder("first"), wait=0):
        waiter = asyncio.create_task(second())
        while not notes:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        assert order == []  # still waiting while the first holds it
        order.append("first releases")
    await asyncio.wait_for(waiter, 15)
    assert order == ["first releases", "second holds"]
    assert notes == [
        "waiting up to 20 s for the lease on gpu1: held by alice@laptop (`first`, since "
        "04:41:07 UTC)"
    ]


async def test_a_wait_that_runs_out_says_who_held_it_and_how_long(tmp_path: Path) -> None:
    async with _lease(tmp_path).hold(_holder("first"), wait=0):
        t0 = time.monotonic()
        with pytest.raises(ServiceError, match=r"still being changed by alice@laptop .* after "
                           r"0\.5 s of waiting"):  # fmt: skip
            async with _lease(tmp_path).hold(_holder("second"), wait=0.5):
                pass
        assert 0.4 < time.monotonic() - t0 < 5


HOLD_AND_HANG = """
import asyncio, sys
from console.service.launch import ServiceFiles
from console.service.lease import Holder, Lease
from console.transport.local import LocalTransport

async def main():
    lease = Lease(LocalTransport("gpu1"), ServiceFiles(sys.argv[1]), timeout=10)
    holder = Holder("bob", "ci-runner", "specconsole restart gpu1", "2026-12-06T05:00:00+00:00")
    async with lease.hold(holder, wait=0):
        print("holding", flush=True)
        await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_a_holder_killed_outright_is_taken_over_and_named(tmp_path: Path) -> None:
    # The console holding the lease dies without cleaning up (SIGKILL): its holder process
    # on the host loses its reader, the lock dies with it, and the holder file is stale.
    console = subprocess.Popen(
        [sys.executable, "-c", HOLD_AND_HANG, str(tmp_path)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    try:
        assert console.stdout is not None and console.stdout.readline() == "holding\n"
        with pytest.raises(ServiceError, match="bob@ci-runner"):
            async with _lease(tmp_path).hold(_holder("mine"), wait=0):
                pass
        console.send_signal(signal.SIGKILL)
        console.wait(10)
    finally:
        console.kill()
    notes: list[str] = []
    async with _lease(tmp_path).hold(_holder("mine"), wait=10, on_note=notes.append) as held:
        assert json.loads((tmp_path / "lease.holder").read_text())["pid"] == held.pid
    assert notes[-1] == (
        "previous holder bob@ci-runner (`specconsole restart gpu1`, since 05:00:00 UTC) is "
        "gone; lease taken over"
    )


async def test_a_lease_whose_holder_ends_is_reported_lost(tmp_path: Path) -> None:
    async with _lease(tmp_path).hold(_holder("first"), wait=0) as held:
        held.check()
        os.kill(held.pid, signal.SIGKILL)  # the link drops: the holder on the host ends
        for _ in range(100):
            if held.lost:
                break
            await asyncio.sleep(0.05)
        with pytest.raises(ServiceError, match="The lease on gpu1 was lost"):
            held.check()


async def test_service_changes_take_the_lease(tmp_path: Path) -> None:
    # Stopping a stopped service changes nothing, but it is a change: it takes the lease.
    profile = builtin_profile("leased", tmp_path / "state")
    async with EngineService.open(profile) as service:
        service.lease_wait = 0
        files = await service.files()
        other = Lease(service.transport, files, timeout=10)
        async with other.hold(_holder("specconsole rollback leased"), wait=0):
            for change in (service.stop(), service.restart(), service.rollback()):
                with pytest.raises(ServiceError, match="being changed by alice@laptop"):
                    await change
            status = await service.status()  # a read takes no lease, and names the holder
            assert status.state == "stopped" and "alice@laptop" in status.lease
        await service.stop()  # free again
