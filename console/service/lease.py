"""The writer's lease on a service: one change at a time per service on its host.

A lease is `flock` on `<service dir>/lease.lock`, held by a small shell process on the
host for as long as the change runs (config write, stop, start, ready). It is held by a
process there, not by a file we must remember to delete, so it dies with its holder: the
holder prints a heartbeat every second, and when the console dies or its SSH link drops,
that write fails (SIGPIPE), the shell exits and the kernel drops the lock. Nothing has to
be "broken" by hand, and a lock can never outlive the process that took it.

Beside the lock, `lease.holder` names the holder (user, machine, command, since when,
the holder's pid on the host) for whoever finds the lease taken. A holder that releases
removes it; one that died leaves it behind, so a holder file found by the next writer
*after* it got the lock is a previous holder that is gone: it says so and takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import shlex
import socket
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from console.errors import ServiceError, TransportError
from console.service.launch import ServiceFiles
from console.transport.base import Transport

Note = Callable[[str], None]
HEARTBEAT_S = 1  # how soon a holder whose link dropped notices (its next write fails)
EXIT_NOT_HELD = 75  # EX_TEMPFAIL: taken by another writer (refused, or waited too long)


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a lease, as `lease.holder` records it."""

    user: str
    machine: str
    command: str
    since: str  # ISO 8601, UTC
    action: str = ""
    pid: int | None = None  # the holding shell on the host

    @classmethod
    def here(cls, action: str) -> Holder:
        """This process, about to take the lease for `action`."""
        argv = [a for a in sys.argv[1:]]
        command = shlex.join(["specconsole", *argv]) if argv else action
        return cls(
            user=getpass.getuser(),
            machine=socket.gethostname(),
            command=command[:300],
            since=datetime.now(UTC).isoformat(timespec="seconds"),
            action=action,
        )

    def fields_json(self) -> str:
        """The record without `pid`, as JSON: the holder's shell adds its own pid."""
        body = {"user": self.user, "machine": self.machine, "command": self.command,
                "since": self.since, "action": self.action}  # fmt: skip
        return json.dumps(body)

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        try:
            data = json.loads(text)
            pid = data.get("pid")
            return cls(
                user=str(data["user"]), machine=str(data["machine"]),
                command=str(data["command"]), since=str(data["since"]),
                action=str(data.get("action", "")), pid=int(pid) if pid is not None else None,
            )  # fmt: skip
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def describe(self) -> str:
        """`alice@laptop (`specconsole set gpu1 x=1 --yes`, since 04:41:07 UTC)`"""
        since = self.since
        with contextlib.suppress(ValueError):
            since = datetime.fromisoformat(self.since).strftime("%H:%M:%S UTC")
        return f"{self.user}@{self.machine} (`{self.command}`, since {since})"


def describe_holder(text: str) -> str:
    """A holder line as read from the host, for a message; raw text if it is not ours."""
    text = text.strip()
    holder = Holder.parse(text)
    if holder is not None:
        return holder.describe()
    return text[:200] or "an unnamed holder"


def _script(files: ServiceFiles, holder: Holder, wait: float) -> str:
    q = shlex.quote
    lock, who = files.path("lease.lock"), files.path("lease.holder")
    # Who holds it now, on one line (the holder file's first line is its JSON record).
    named = f'"$(head -n 1 {q(who)} 2>/dev/null)"'
    if wait > 0:
        gave_up = f"{{ printf 'timeout %s\\n' {named}; exit {EXIT_NOT_HELD}; }}"
        take = f"printf 'busy %s\\n' {named}; flock -w {wait:.1f} 9 || {gave_up}"
    else:
        take = f"printf 'refused %s\\n' {named}; exit {EXIT_NOT_HELD}"
    record = holder.fields_json()[1:]  # `"user": ..., }`: the shell puts its pid in front
    return f"""
mkdir -p {q(files.dir)} || exit 4
command -v flock >/dev/null 2>&1 || {{ echo noflock; exit 5; }}
exec 9>>{q(lock)} || exit 4
if ! flock -n 9; then
  {take}
fi
if [ -s {q(who)} ]; then printf 'stale %s\\n' {named}; fi
printf '{{"pid": %s, %s\\n' "$$" {q(record)} > {q(who)}.$$ && mv -f {q(who)}.$$ {q(who)} || exit 4
echo "held $$"
# The heartbeat: once nobody reads it (console gone, link dropped) the write fails and
# the shell exits, which drops the lock. `sleep` must not inherit the lock's descriptor.
while echo .; do sleep {HEARTBEAT_S} 9>&- & wait $!; done
"""


class HeldLease:
    """A lease held now: `lost` turns true if its holder on the host ended early."""

    def __init__(self, host: str, pid: int, reader: asyncio.Task[None]) -> None:
        self.host = host
        self.pid = pid
        self._reader = reader
        self.released = False

    @property
    def lost(self) -> bool:
        return self._reader.done() and not self.released

    def check(self) -> None:
        """Raise before a change if the lease is gone (the link dropped under it)."""
        if self.lost:
            raise ServiceError(
                f"The lease on {self.host} was lost (its holder on the host ended, likely "
                "a dropped link); nothing more was changed: run the command again."
            )


class Lease:
    """The writer's lease of one service on one host."""

    def __init__(self, transport: Transport, files: ServiceFiles, *, timeout: float) -> None:
        self.transport = transport
        self.files = files
        self.timeout = timeout  # one short command on the host (release)

    @property
    def holder_path(self) -> str:
        return self.files.path("lease.holder")

    async def current_holder(self) -> Holder | None:
        """Who the holder file names (a read: it takes nothing and may be stale)."""
        try:
            text = (await self.transport.read_file(self.holder_path)).decode(errors="replace")
        except (FileNotFoundError, TransportError):
            return None
        return Holder.parse(text.splitlines()[0]) if text.strip() else None

    async def holder_gone(self, holder: Holder) -> bool | None:
        """Whether the holder a holder file names has ended (a stale record: its lock went
        with it, and the next writer takes over). The holding shell keeps the lock open
        on descriptor 9, so a live pid without that descriptor is another process that
        got the pid since. None: the record has no pid, or the host did not answer."""
        if holder.pid is None:
            return None
        lock = shlex.quote(self.files.path("lease.lock"))
        proc = f"/proc/{int(holder.pid)}"
        script = (
            f"[ -e {proc} ] || {{ echo gone; exit 0; }}\n"
            # a zombie (ended, not yet reaped by its parent) holds no lock either
            f"[ \"$(sed 's/^.*) //' {proc}/stat 2>/dev/null | cut -c1)\" = Z ] && "
            "{ echo gone; exit 0; }\n"
            f"held=$(readlink {proc}/fd/9 2>/dev/null) || {{ echo alive; exit 0; }}\n"
            f'[ "$held" = "$(readlink -f {lock})" ] && echo alive || echo gone'
        )
        try:
            result = await self.transport.run(script, timeout=self.timeout)
        except (TransportError, TimeoutError):
            return None
        answer = result.stdout.strip()
        return {"gone": True, "alive": False}.get(answer)

    @contextlib.asynccontextmanager
    async def hold(
        self, holder: Holder, *, wait: float, on_note: Note | None = None
    ) -> AsyncIterator[HeldLease]:
        """Take the lease (waiting up to `wait` s; 0: refuse at once), hold it for the
        block, release it after, whatever happened inside."""
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        reader = asyncio.create_task(self._read(_script(self.files, holder, wait), lines))
        try:
            pid = await self._until_held(lines, wait, on_note or (lambda _text: None))
            held = HeldLease(self.transport.name, pid, reader)
            try:
                yield held
            finally:
                held.released = True
                await self._forget(pid)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, TransportError):
                await reader

    async def _read(self, script: str, lines: asyncio.Queue[str | None]) -> None:
        try:
            async with contextlib.aclosing(self.transport.stream(script)) as stream:
                async for line in stream:
                    if line != ".":
                        lines.put_nowait(line)
        finally:
            lines.put_nowait(None)

    async def _until_held(
        self, lines: asyncio.Queue[str | None], wait: float, on_note: Note
    ) -> int:
        host = self.transport.name
        try:
            async with asyncio.timeout(wait + self.timeout):
                return await _read_until_held(host, lines, wait, on_note)
        except TimeoutError:
            raise ServiceError(
                f"Taking the lease on {host} did not finish within {wait + self.timeout:g} s."
            ) from None

    async def _forget(self, pid: int) -> None:
        """Remove the holder file if it is still ours (a lease lost with the link may
        have been taken by someone else since), while the lock is still held."""
        q = shlex.quote(self.holder_path)
        script = (
            f"owner=$(sed -n '1s/^{{\"pid\": \\([0-9]*\\),.*/\\1/p' {q} 2>/dev/null)\n"
            f'[ "$owner" = {pid} ] && rm -f {q}; exit 0'
        )
        with contextlib.suppress(TransportError, TimeoutError):
            await self.transport.run(script, timeout=self.timeout)


async def _read_until_held(
    host: str, lines: asyncio.Queue[str | None], wait: float, on_note: Note
) -> int:
    """The holder script's lines up to `held PID`; its refusal as one sentence."""
    other: list[str] = []
    while (line := await lines.get()) is not None:
        word, _, rest = line.partition(" ")
        if word == "held" and rest.strip().isdigit():
            return int(rest)
        if word == "busy":
            on_note(f"waiting up to {wait:g} s for the lease on {host}: held by "
                    f"{describe_holder(rest)}")  # fmt: skip
        elif word == "stale":
            on_note(f"previous holder {describe_holder(rest)} is gone; lease taken over")
        elif word in ("refused", "timeout"):
            raise ServiceError(_taken(host, describe_holder(rest), word, wait))
        elif word == "noflock":
            raise ServiceError(
                f"{host} has no `flock` command (util-linux), which the console's lease "
                "needs; install util-linux there."
            )
        else:
            other.append(line)
    reason = other[-1] if other else "no answer"
    raise ServiceError(f"Taking the lease on {host} failed: {reason}.")


def _taken(host: str, holder: str, word: str, wait: float) -> str:
    if word == "refused":
        return (
            f"The service on {host} is being changed by {holder}; not waiting for its lease "
            "(--wait-lock 0): run again when it is done, or pass --wait-lock SECONDS."
        )
    return (
        f"The service on {host} is still being changed by {holder} after {wait:g} s of "
        "waiting for its lease: run again later, or pass a longer --wait-lock SECONDS."
    )
