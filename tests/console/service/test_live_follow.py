"""`EngineService.logs(follow=True)` through a real sshd that is killed and started again:
the follow says so, resumes, prints every line exactly once (on a log that never goes
quiet, too), and after a log rotation prints the new file."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from console.service import EngineService
from console.transport import open_transport
from tests.console.conftest import ssh_profile_for
from tests.console.factories import builtin_profile
from tests.console.sshd_restart import RestartableSSHD

pytestmark = pytest.mark.timeout(120)


@pytest_asyncio.fixture
async def service(
    restartable_sshd: RestartableSSHD, tmp_path: Path
) -> AsyncIterator[tuple[EngineService, Path]]:
    server = restartable_sshd.server
    ssh = ssh_profile_for(server, tmp_path)
    profile = builtin_profile("gpu-flaky", tmp_path / "state", flags={}, ssh=ssh)
    transport = open_transport(profile)
    svc = EngineService(profile, transport)
    log = Path((await svc.files()).log)
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield svc, log
    finally:
        restartable_sshd.start()
        await transport.close()


class Collector:
    def __init__(self, svc: EngineService, lines: int) -> None:
        self.got: list[str] = []
        self.task = asyncio.create_task(self._run(svc, lines))

    async def _run(self, svc: EngineService, lines: int) -> None:
        async for line in svc.logs(follow=True, lines=lines):
            self.got.append(line)

    @property
    def text(self) -> list[str]:
        return [x for x in self.got if not x.startswith("-- ")]

    @property
    def markers(self) -> list[str]:
        return [x for x in self.got if x.startswith("-- ")]

    async def until(self, check, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert not self.task.done(), self.task
            assert time.monotonic() < deadline, self.got[-10:]
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task


async def test_follow_resumes_a_busy_log_without_repeating_or_losing_a_line(
    service: tuple[EngineService, Path], restartable_sshd: RestartableSSHD
) -> None:
    svc, log = service
    log.write_text("".join(f"old {i}\n" for i in range(20)))
    stop = threading.Event()

    def writer() -> None:  # a line every 20 ms, through the outage: it never goes quiet
        i = 0
        while not stop.is_set():
            with log.open("a") as fh:
                fh.write(f"line {i}\n")
            i += 1
            time.sleep(0.02)

    follow = Collector(svc, lines=5)
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        await follow.until(lambda: len(follow.text) > 20)
        restartable_sshd.stop()
        await follow.until(lambda: bool(follow.markers))
        await asyncio.sleep(2)
        restartable_sshd.start()
        await follow.until(lambda: any("reconnected" in m for m in follow.markers))
        await asyncio.sleep(1)
    finally:
        stop.set()
        thread.join(5)
    written = log.read_text().splitlines()
    await follow.until(lambda: follow.text[-1:] == written[-1:])
    await follow.stop()
    # The 5-line backlog when the follow started, then every line once, in order.
    start = written.index(follow.text[0])
    assert follow.text == written[start:]
    assert len(follow.text) > 100
    assert follow.markers[0] == (
        "-- link to gpu-flaky lost; reconnecting (attempt 1, next in 0.5 s) --"
    )
    assert follow.markers[-1].startswith("-- reconnected after ")
    assert not any("missing" in m for m in follow.markers)


async def test_after_a_rotation_the_new_log_is_printed_whole(
    service: tuple[EngineService, Path], restartable_sshd: RestartableSSHD
) -> None:
    svc, log = service
    log.write_text("".join(f"old {i}\n" for i in range(3)))
    follow = Collector(svc, lines=10)
    await follow.until(lambda: len(follow.text) == 3)
    restartable_sshd.stop()
    await follow.until(lambda: bool(follow.markers))
    # The engine restarted meanwhile: its start rotated engine.log to engine.log.1.
    log.rename(log.with_name(log.name + ".1"))
    log.write_text("".join(f"new {i}\n" for i in range(4)))
    restartable_sshd.start()
    await follow.until(lambda: len(follow.text) == 7)
    await asyncio.sleep(0.5)
    await follow.stop()
    assert follow.text == [f"old {i}" for i in range(3)] + [f"new {i}" for i in range(4)]


async def test_grep_filters_lines_but_not_markers(
    service: tuple[EngineService, Path], restartable_sshd: RestartableSSHD
) -> None:
    svc, log = service
    log.write_text("keep 1\ndrop 1\n")
    got: list[str] = []

    async def run() -> None:
        async for line in svc.logs(follow=True, lines=10, grep="keep"):
            got.append(line)

    task = asyncio.create_task(run())
    try:
        deadline = time.monotonic() + 30
        while got != ["keep 1"]:
            assert time.monotonic() < deadline, got
            await asyncio.sleep(0.05)
        restartable_sshd.stop()
        with log.open("a") as fh:
            fh.write("drop 2\nkeep 2\n")
        await asyncio.sleep(1)
        restartable_sshd.start()
        while got[-1:] != ["keep 2"]:
            assert time.monotonic() < deadline + 30, got
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    lines = [x for x in got if not x.startswith("-- ")]
    assert lines == ["keep 1", "keep 2"]
    assert any("reconnecting" in x for x in got) and any("reconnected" in x for x in got)


async def test_without_backlog_a_drop_before_any_new_line_resumes_at_the_right_place(
    service: tuple[EngineService, Path], restartable_sshd: RestartableSSHD
) -> None:
    """`lines=0` (what the live series uses): nothing is printed before the drop, so the
    log's last lines at the start mark where to resume; the old ones are not replayed."""
    svc, log = service
    log.write_text("".join(f"old {i}\n" for i in range(50)))
    follow = Collector(svc, lines=0)
    await asyncio.sleep(2)  # following, on a quiet log
    restartable_sshd.stop()
    await follow.until(lambda: bool(follow.markers))
    with log.open("a") as fh:
        fh.write("during 1\nduring 2\n")
    restartable_sshd.start()
    await follow.until(lambda: len(follow.text) >= 2)
    with log.open("a") as fh:
        fh.write("after 1\n")
    await follow.until(lambda: len(follow.text) >= 3)
    await asyncio.sleep(0.5)
    await follow.stop()
    assert follow.text == ["during 1", "during 2", "after 1"]
