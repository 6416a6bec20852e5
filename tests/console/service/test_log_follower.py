"""The follower's resume point on a slow or flaky link, with the link's timing scripted:
a channel that takes seconds to open, a backlog that stalls mid-way, a link that drops
again mid-backlog. Every line comes exactly once (CI saw two lines twice after an sshd
restart on a host running at half its speed); a rotated log is still printed whole.
The real-sshd versions of the common cases are in test_live_follow.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from console.errors import TransportError
from console.service.log_follower import QUIET_S, LogFollower
from console.settings import Backoff, ConsoleSettings

pytestmark = pytest.mark.timeout(60)

SETTINGS = ConsoleSettings(command_timeout_s=10, backoff=Backoff(start_s=0.05, max_s=0.05))


@dataclass
class Attempt:
    """How one follow stream behaves: seconds before its first line, a stall before the
    backlog line at an index, and a drop before the backlog line at an index."""

    first_s: float = 0.0
    stall: dict[int, float] = field(default_factory=dict)
    drop_at: int | None = None


class ScriptedLog:
    """The engine's log and the link to it: each `follow_logs` stream takes the next
    script, replays the last `backlog` lines as it says, then every line appended until
    `drop_live` ends it with a lost link."""

    def __init__(self, lines: list[str], attempts: list[Attempt]) -> None:
        self.lines = lines
        self.attempts = attempts
        self.drop_live = asyncio.Event()  # ends the live stream with a lost link

    async def follow_logs(self, backlog: int | None = 0) -> AsyncIterator[str]:
        script = self.attempts.pop(0) if self.attempts else Attempt()
        old = self.lines[-backlog:] if backlog else []
        pos = len(self.lines)
        await asyncio.sleep(script.first_s)
        for i, line in enumerate(old):
            await asyncio.sleep(script.stall.get(i, 0.0))
            if script.drop_at == i:
                raise TransportError("the link dropped")
            yield line
        while True:
            while pos < len(self.lines):
                yield self.lines[pos]
                pos += 1
            if self.drop_live.is_set():
                self.drop_live.clear()
                raise TransportError("the link dropped")
            await asyncio.sleep(0.01)

    async def log_tail(self, lines: int = 50) -> list[str]:
        return self.lines[-lines:]


class AnyHost:
    async def run(self, argv, timeout: float | None = None) -> None:
        return None


async def _follow(log: ScriptedLog, got: list[str]) -> None:
    follower = LogFollower(log, AnyHost(), "gpu1", SETTINGS, lines=0, on_link=lambda *_: None)  # type: ignore[arg-type]
    async for line in follower.lines(follow=True):
        got.append(line)


async def _until(check, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


async def _drop_and_resume(attempts: list[Attempt]) -> tuple[list[str], list[str]]:
    """Lines 0-29 before the follower attaches, 30-49 seen live, a drop, 50-59 written
    while the link is down, then the resume (scripted by `attempts`) and 60-69 live."""
    lines = [f"[12:00:{i:02d}] line {i}" for i in range(30)]
    log = ScriptedLog(lines, [Attempt(), *attempts])
    got: list[str] = []
    task = asyncio.create_task(_follow(log, got))
    try:
        await asyncio.sleep(0.1)
        lines += [f"[12:01:{i:02d}] line {i}" for i in range(30, 50)]
        await _until(lambda: len(got) == 20)
        lines += [f"[12:02:{i:02d}] line {i}" for i in range(50, 60)]
        log.drop_live.set()
        await _until(lambda: len(got) >= 30)
        lines += [f"[12:03:{i:02d}] line {i}" for i in range(60, 70)]
        await _until(lambda: len(got) >= 40)
        await asyncio.sleep(QUIET_S + 0.5)  # anything repeated late would be in by now
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return got, lines[30:]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "attempts",
    [
        pytest.param([Attempt(first_s=QUIET_S * 2)], id="channel-slow-to-open"),
        pytest.param([Attempt(stall={25: QUIET_S * 2})], id="stall-mid-backlog"),
        pytest.param([Attempt(drop_at=40), Attempt()], id="drop-mid-backlog"),
        pytest.param(
            [Attempt(stall={10: QUIET_S * 2}, drop_at=45), Attempt(first_s=QUIET_S * 2)],
            id="stall-drop-and-slow-channel",
        ),
    ],
)
async def test_a_slow_or_flaky_resume_prints_every_line_once(attempts: list[Attempt]) -> None:
    got, written = await _drop_and_resume(attempts)
    assert got == written  # no line twice, none lost, in order


@pytest.mark.asyncio
async def test_a_rotated_log_is_judged_by_a_pause_and_printed_whole() -> None:
    """No line seen last is in the new log: its backlog is all new, and the end of it is
    the first pause (the follower does not wait the command timeout for lines that will
    never come)."""
    old = [f"[11:00:{i:02d}] old {i}" for i in range(20)]
    log = ScriptedLog(list(old), [Attempt(), Attempt(stall={5: QUIET_S / 4})])
    got: list[str] = []
    task = asyncio.create_task(_follow(log, got))
    try:
        await asyncio.sleep(0.1)
        log.lines.append("[11:01:00] last before the restart")
        await _until(lambda: len(got) == 1)
        new = [f"[11:02:{i:02d}] new {i}" for i in range(12)]
        log.lines[:] = new  # the engine restarted: engine.log is a new file
        log.drop_live.set()
        await _until(lambda: len(got) == 13, timeout=QUIET_S * 4)
        log.lines.append("[11:03:00] live after")
        await _until(lambda: len(got) == 14)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert got == ["[11:01:00] last before the restart", *new, "[11:03:00] live after"]
