"""The one protocol every host speaks, local or SSH.

A command is either an argv list (never touched by a shell on our side: it is joined with
`shlex.join` only where a remote shell must parse it) or one string, which is always a
POSIX `sh` script. Callers that put user input into a script must `shlex.quote` it; the
helpers here only ever build scripts from quoted parts.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from console.errors import TransportError

Command = Sequence[str] | str


@dataclass(frozen=True)
class CommandResult:
    """What a finished command left behind."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def last_line(self) -> str:
        """The last non-empty line of stderr, else stdout: the usual reason for a failure."""
        for text in (self.stderr, self.stdout):
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            if lines:
                return lines[-1]
        return ""


class CommandFailed(TransportError):
    """A command exited non-zero where the caller needed success."""

    def __init__(self, host: str, what: str, result: CommandResult) -> None:
        reason = result.last_line() or "no output"
        super().__init__(f"{what} failed on {host} (exit {result.exit_code}): {reason}")
        self.result = result


class CommandTimeout(TransportError):
    """A command ran past its time limit and was stopped."""


class LinkLost(TransportError):
    """The connection to the host dropped while a command was running."""


@runtime_checkable
class Transport(Protocol):
    """How the console acts on one host."""

    #: the name the user knows the host by, used in every message
    name: str

    async def run(
        self, cmd: Command, *, input: str | None = None, timeout: float | None = 60.0
    ) -> CommandResult:
        """Run a command to completion and return its exit code and output."""
        ...

    def stream(self, cmd: Command) -> AsyncIterator[str]:
        """Yield a command's stdout+stderr lines (without newline) as they arrive.

        Ends when the command exits; raises `LinkLost` if the link drops meanwhile.
        """
        ...

    async def read_file(self, path: str) -> bytes:
        """Read a file; raises `FileNotFoundError` if it does not exist."""
        ...

    async def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """Write a file atomically (temp file in the same directory, then rename)."""
        ...

    def forward(self, port: int, host: str = "127.0.0.1") -> AbstractAsyncContextManager[int]:
        """Make `host:port` as seen from the host reachable here; yields the local port."""
        ...

    async def home(self) -> str:
        """The home directory of the user we act as on the host."""
        ...

    async def close(self) -> None: ...


def as_script(cmd: Command) -> str:
    """Render a command as one `sh` script: argv is quoted element by element."""
    if isinstance(cmd, str):
        return cmd
    if not cmd:
        raise ValueError("empty command")
    return shlex.join(cmd)


def describe(cmd: Command, limit: int = 60) -> str:
    """A short form of a command for messages."""
    text = as_script(cmd)
    return text if len(text) <= limit else text[: limit - 3] + "..."


async def check(transport: Transport, cmd: Command, what: str, **kw: object) -> CommandResult:
    """Run a command and raise `CommandFailed` (naming `what`) unless it exits 0."""
    result = await transport.run(cmd, **kw)  # type: ignore[arg-type]
    if not result.ok:
        raise CommandFailed(transport.name, what, result)
    return result


async def expand_path(transport: Transport, path: str) -> str:
    """Expand a leading `~` against the host's home directory (SFTP does not)."""
    if path == "~" or path.startswith("~/"):
        return (await transport.home()).rstrip("/") + path[1:]
    return path
