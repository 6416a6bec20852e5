"""The engine's log, printed once or followed across link drops without repeating a line.

A followed log outlives the link. When the stream drops (any `TransportError`: sshd
restarted, the network gone) the follower probes the host with the settings' backoff
(0.5 s, doubling to 10 s by default) and resumes from a backlog of the log's last lines,
skipping everything up to the last line it had already seen, so no line comes twice. If
that line is no longer in the backlog (a long outage, or the engine restarted and rotated
its log) the backlog is all new, and if it was full a marker says lines may be missing.

The resume point is found in the stream itself, so its timing must not decide it: a
loaded host can take seconds to open the channel or stall mid-backlog. Where the log
(read whole, once) still holds the last lines seen, the follower waits for them in the
stream however long the link takes (up to the command timeout a line); only a log
without them (rotated) is judged by a pause. A link that drops again mid-backlog prints
nothing of it: the next attempt reads it again from the same resume point.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

from console.errors import ServiceError, TransportError
from console.service.supervisor import Supervisor
from console.settings import ConsoleSettings
from console.transport.base import Transport

OnLink = Callable[[bool, str], None]

RESUME_BACKLOG_MIN = 1000  # lines re-read after a drop to find where the output stopped
QUIET_S = 1.0  # a backlog arrives at once; this long without a line means it is done
RESYNC_MAX_S = 5.0
ANCHOR_LINES = 8  # the last raw lines (before grep) kept to find the resume point


class LogFollower:
    """One `logs` call: `lines(follow=...)` yields log lines (and link markers)."""

    def __init__(
        self,
        supervisor: Supervisor,
        transport: Transport,
        host: str,
        settings: ConsoleSettings,
        *,
        lines: int = 200,
        grep: str | None = None,
        on_link: OnLink | None = None,
    ) -> None:
        try:
            self.pattern = re.compile(grep) if grep else None
        except re.error as exc:
            raise ServiceError(
                f"--grep {grep!r} is not a valid regular expression: {exc}."
            ) from None
        self.supervisor = supervisor
        self.transport = transport
        self.host = host
        self.settings = settings
        self.backlog = lines
        self.resume_backlog = max(lines, RESUME_BACKLOG_MIN)
        self.on_link = on_link
        self.seen: deque[str] = deque(maxlen=ANCHOR_LINES)
        self.markers: list[str] = []
        self.ended = False

    def _wanted(self, line: str) -> bool:
        return self.pattern is None or bool(self.pattern.search(line))

    def _report(self, up: bool, text: str) -> None:
        # Link changes go to `on_link` when given; otherwise they are yielded as marker
        # lines, whatever `grep` says.
        if self.on_link is not None:
            self.on_link(up, text)
        else:
            self.markers.append(f"-- {text} --")

    def _flush(self) -> list[str]:
        out, self.markers = self.markers, []
        return out

    async def lines(self, *, follow: bool) -> AsyncIterator[str]:
        """The last lines; with `follow`, then every new line until cancelled. A host that
        cannot be reached when following starts raises, as without `follow`."""
        if not follow:
            for line in await self.supervisor.log_tail(self.backlog):
                if self._wanted(line):
                    yield line
            return
        if self.backlog <= 0:
            # No backlog, so nothing may be seen before the link drops; the log's current
            # last lines are where a resume must start (and reaching the host now raises
            # here, as without follow).
            self.seen.extend(await self.supervisor.log_tail(ANCHOR_LINES))
        else:
            await self._probe()  # unreachable now: say so
        resuming = False
        while True:
            # aclosing: a reader that stops early ends the stream on the host now, not
            # whenever the inner generator is collected.
            async with contextlib.aclosing(self._attempt(resuming)) as attempt:
                async for line in attempt:
                    yield line
            if self.ended:
                return
            async with contextlib.aclosing(self._reconnect()) as markers:
                async for marker in markers:
                    yield marker
            resuming = True

    async def _probe(self) -> None:
        await self.transport.run(["true"], timeout=self.settings.command_timeout_s)

    async def _pump(self, backlog: int, queue: asyncio.Queue) -> None:
        # One follow attempt, fed into a queue so the reader can wait with a timeout
        # without cancelling (and so breaking) the stream itself.
        source = self.supervisor.follow_logs(backlog=backlog)
        try:
            async for line in source:
                queue.put_nowait(("line", line))
            queue.put_nowait(("end", None))
        except Exception as exc:
            queue.put_nowait(("error", exc))
        finally:
            with contextlib.suppress(Exception):
                await source.aclose()  # type: ignore[attr-defined]

    async def _attempt(self, resuming: bool) -> AsyncIterator[str]:
        """One stream, until it ends (`ended`) or the link drops (returns)."""
        queue: asyncio.Queue = asyncio.Queue()
        task = asyncio.create_task(
            self._pump(self.resume_backlog if resuming else self.backlog, queue)
        )
        try:
            carry = None
            if resuming:
                backlog, carry = await self._skip_seen(queue)
                for marker in self._flush():
                    yield marker
                for line in backlog:
                    self.seen.append(line)
                    if self._wanted(line):
                        yield line
            while True:
                kind, value = carry if carry is not None else await queue.get()
                carry = None
                if kind == "end":
                    self.ended = True
                    return
                if kind == "error":
                    if not isinstance(value, TransportError):
                        raise value
                    return
                self.seen.append(value)
                if self._wanted(value):
                    yield value
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def _anchor_in_log(self, anchor: list[str]) -> bool:
        """Whether the log's last `resume_backlog` lines, read whole, hold `anchor` (the
        lines seen last): then the stream's backlog reaches them, however slowly it comes.
        A host that does not answer is taken to hold them (waiting is the safe side)."""
        try:
            tail = await self.supervisor.log_tail(self.resume_backlog)
        except (TransportError, ServiceError):
            return True
        n = len(anchor)
        return any(tail[i : i + n] == anchor for i in range(len(tail) - n + 1))

    async def _skip_seen(self, queue: asyncio.Queue) -> tuple[list[str], tuple | None]:
        """The resumed backlog's new lines, and an end/error that came during it.

        A busy log never goes quiet (every /metrics scrape is an access-log line), so the
        backlog's end is where the lines seen last are. While the log holds them, each line
        may take up to the command timeout (a loaded host's channel, a stall mid-backlog);
        without them (a rotated log) the end is a pause, a full backlog or a few seconds,
        whichever comes first. The first line always gets the command timeout: until it
        comes, nothing says how fast the link is."""
        backlog: list[str] = []
        anchor = list(self.seen)
        synced = not anchor
        patient = synced or await self._anchor_in_log(anchor)
        slow = self.settings.command_timeout_s
        deadline: float | None = None  # a rotated log's: from its first line
        while not synced and len(backlog) < self.resume_backlog:
            if patient or not backlog:
                wait = slow
            else:
                deadline = deadline or time.monotonic() + RESYNC_MAX_S
                wait = min(QUIET_S, deadline - time.monotonic())
                if wait <= 0:
                    break
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                break
            if item[0] == "error":
                # the link dropped again before the resume point: none of this backlog is
                # known to be new, and the next attempt reads it again
                return [], item
            if item[0] != "line":
                return backlog, item
            backlog.append(item[1])
            if backlog[-len(anchor) :] == anchor:
                backlog.clear()  # all printed already
                synced = True
        if not synced and len(backlog) >= self.resume_backlog:
            self._report(
                True,
                f"the last line printed is not in the log's last "
                f"{self.resume_backlog} lines; some lines may be missing",
            )
        return backlog, None

    async def _reconnect(self) -> AsyncIterator[str]:
        """The link dropped: probe until the host answers (yielding markers meanwhile)."""
        down_since = time.monotonic()
        for attempt, delay in enumerate(self.settings.backoff.delays(), start=1):
            self._report(
                False,
                f"link to {self.host} lost; reconnecting (attempt {attempt}, next in {delay:g} s)",
            )
            for marker in self._flush():
                yield marker
            await asyncio.sleep(delay)
            try:
                await self._probe()
            except TransportError:
                continue
            break
        self._report(True, f"reconnected after {time.monotonic() - down_since:.1f} s")
        for marker in self._flush():
            yield marker
