"""The `local` host: the transport protocol on this machine, no SSH involved."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from console.transport.base import Command, CommandResult, CommandTimeout, describe


def _argv(cmd: Command) -> Sequence[str]:
    # A string is always an sh script, the same rule the SSH transport follows.
    return ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    # Each command gets its own session so a timeout takes its children down too.
    if proc.returncode is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


class LocalTransport:
    """Runs commands with asyncio subprocesses and touches files directly."""

    def __init__(self, name: str = "local") -> None:
        self.name = name

    async def run(
        self, cmd: Command, *, input: str | None = None, timeout: float | None = 60.0
    ) -> CommandResult:
        argv = _argv(cmd)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            return CommandResult(127, "", f"{argv[0]}: command not found")
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(input.encode() if input is not None else None), timeout
            )
        except TimeoutError:
            _kill_group(proc)
            await proc.wait()
            raise CommandTimeout(
                f"`{describe(cmd)}` on {self.name} did not finish within {timeout:g} s."
            ) from None
        except asyncio.CancelledError:
            _kill_group(proc)
            raise
        assert proc.returncode is not None
        return CommandResult(
            proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        )

    async def stream(self, cmd: Command) -> AsyncIterator[str]:
        proc = await asyncio.create_subprocess_exec(
            *_argv(cmd),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        try:
            while True:
                raw = await proc.stdout.readline()
                if not raw:
                    break
                yield raw.decode(errors="replace").rstrip("\r\n")
            await proc.wait()
        finally:
            # The consumer may stop early (a `tail -f` is never finished): end the command.
            _kill_group(proc)
            if proc.returncode is None:
                await proc.wait()

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(Path(os.path.expanduser(path)).read_bytes)

    async def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        await asyncio.to_thread(_atomic_write, Path(os.path.expanduser(path)), data, mode)

    @asynccontextmanager
    async def forward(self, port: int, host: str = "127.0.0.1") -> AsyncIterator[int]:
        # The service already listens on this machine: nothing to forward.
        yield port

    async def home(self) -> str:
        return os.path.expanduser("~")

    def is_connected(self) -> bool:
        return True  # nothing between us and the host to lose

    async def close(self) -> None:
        return None


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
