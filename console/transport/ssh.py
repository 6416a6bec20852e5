"""SSH hosts via asyncssh, behaving like OpenSSH's client where operators expect it to.

- `~/.ssh/config` (HostName, User, Port, IdentityFile, ProxyJump, UserKnownHostsFile,
  ConnectTimeout, ServerAliveInterval) is honoured; connecting (hops, host keys,
  reconnects) is `ssh_link.SSHLink`; this module is what runs over the link.
- Host keys: see `hostkeys.py`. Unknown keys need a confirmation, changed keys are refused.
- A dropped link fails the command in flight with `LinkLost`; the next call reconnects
  with the settings' backoff. Keepalives make a silently dead link visible.
- Commands reach any login shell (bash, zsh, fish, dash) as one `sh` script, and what the
  shell's rc files print before it is cut off: see `remote_shell.py`.
- Files go over SFTP; where sshd has no SFTP subsystem (found out once per connection),
  over the command channel instead: see `exec_files.py`.
"""

from __future__ import annotations

import asyncio
import posixpath
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import asyncssh
from asyncssh.constants import OPEN_REQUEST_SESSION_FAILED

from console.errors import TransportError
from console.settings import DEFAULT_SETTINGS, ConsoleSettings
from console.transport.base import Command, CommandResult, CommandTimeout, LinkLost, describe
from console.transport.exec_files import MISSING, read_script, write_script
from console.transport.hostkeys import ConfirmHostKey
from console.transport.remote_shell import (
    after_mark,
    login_shell_line,
    marked_script,
    new_mark,
    pid_after_mark,
)
from console.transport.ssh_link import SSHLink, SSHOptions

__all__ = ["SSHLink", "SSHOptions", "SSHTransport"]


def _reason(stderr: bytes, code: int) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1].rstrip(".") if lines else f"exit {code}"


class SSHTransport:
    """One SSH host: commands, files and port forwards over its `SSHLink`."""

    def __init__(
        self,
        options: SSHOptions,
        *,
        name: str | None = None,
        confirm_host_key: ConfirmHostKey | None = None,
        settings: ConsoleSettings | None = None,
    ) -> None:
        self.options = options
        self.name = name or options.destination
        self.settings = settings or DEFAULT_SETTINGS
        self.link = SSHLink(
            options, name=self.name, confirm_host_key=confirm_host_key, settings=self.settings
        )
        self._home: str | None = None
        self._no_sftp: asyncssh.SSHClientConnection | None = None  # its sshd has no SFTP

    @property
    def confirm_host_key(self) -> ConfirmHostKey | None:
        return self.link.confirm_host_key

    def is_connected(self) -> bool:
        """Whether the SSH connection is up now (a port forward over it still works)."""
        return self.link.alive()

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The open connection to the destination, (re)connecting with backoff if needed."""
        return await self.link.connection()

    async def close(self) -> None:
        await self.link.close()

    def _lost(self, cmd: Command) -> LinkLost:
        return LinkLost(
            f"The connection to {self.name} dropped while running `{describe(cmd)}`; "
            "it will reconnect on the next command."
        )

    # -- commands -------------------------------------------------------------------

    async def _end_remote(self, proc: asyncssh.SSHClientProcess, pid: str | None) -> None:
        with suppress(asyncssh.Error, OSError):
            proc.send_signal("TERM")
        proc.close()
        if pid and pid.isdigit() and self.link.alive():
            # The session's process group when sh leads it, else just the command.
            with suppress(TransportError, asyncssh.Error, OSError, TimeoutError):
                await self._execute(
                    f"kill -s TERM -- -{pid} 2>/dev/null || kill -s TERM {pid} 2>/dev/null",
                    timeout=10,
                    _track=False,
                )

    async def run(
        self,
        cmd: Command,
        *,
        input: str | None = None,
        timeout: float | None = 60.0,
    ) -> CommandResult:
        code, out, err = await self._execute(
            cmd, input=None if input is None else input.encode(), timeout=timeout
        )
        return CommandResult(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    async def _execute(
        self,
        cmd: Command,
        *,
        input: bytes | None = None,
        timeout: float | None = 60.0,
        _track: bool = True,
    ) -> tuple[int, bytes, bytes]:
        """`run` in bytes: exit code, stdout and stderr with the rc files' output cut off."""
        conn = await self.connection()
        mark = new_mark()
        remote = login_shell_line(marked_script(cmd, mark, merge=False))
        try:
            proc = await conn.create_process(remote, encoding=None)
        except (asyncssh.ChannelOpenError, asyncssh.misc.ConnectionLost, OSError):
            raise self._lost(cmd) from None
        pid: str | None = None
        stderr_head = b""
        try:
            if input is not None:
                proc.stdin.write(input)
            proc.stdin.write_eof()
            async with asyncio.timeout(timeout):
                # Up to the marker, stderr is the rc files' (the pid is on the marker line).
                # Kill-on-timeout needs no pid for the little `kill` command itself.
                while _track:
                    line = await proc.stderr.readline()
                    stderr_head += line
                    if not line or (pid := pid_after_mark(line, mark)) is not None:
                        break
                done = await proc.wait()
        except TimeoutError:
            await self._end_remote(proc, pid)
            raise CommandTimeout(
                f"`{describe(cmd)}` on {self.name} did not finish within {timeout:g} s."
            ) from None
        except (asyncssh.misc.ConnectionLost, asyncssh.DisconnectError, BrokenPipeError, OSError):
            raise self._lost(cmd) from None
        except asyncio.CancelledError:
            proc.close()
            raise
        if done.exit_status is None and done.exit_signal is None:
            raise self._lost(cmd)
        code = done.exit_status if done.exit_status is not None else 128 + 15
        if code == -1:  # asyncssh's "killed by a signal"
            code = 128 + 15
        stdout = bytes(done.stdout or b"")
        stderr = stderr_head + bytes(done.stderr or b"")
        # No marker: the shell failed before the script ran; what it printed is the reason.
        out, err = after_mark(stdout, mark), after_mark(stderr, mark)
        return code, stdout if out is None else out, stderr if err is None else err

    async def stream(self, cmd: Command) -> AsyncIterator[str]:
        conn = await self.connection()
        mark = new_mark()
        try:
            # The script sends its stderr to stdout after the marker; the channel's stderr
            # then carries only what the rc files printed there.
            proc = await conn.create_process(
                login_shell_line(marked_script(cmd, mark, merge=True)),
                encoding=None,
                stderr=asyncssh.DEVNULL,
            )
        except (asyncssh.ChannelOpenError, asyncssh.misc.ConnectionLost, OSError):
            raise self._lost(cmd) from None
        pid: str | None = None
        before_mark: list[bytes] = []  # the rc files' banner, unless no marker ever comes
        try:
            proc.stdin.write_eof()
            while True:
                try:
                    line = await proc.stdout.readline()
                except (asyncssh.misc.ConnectionLost, asyncssh.DisconnectError, OSError):
                    raise self._lost(cmd) from None
                if not line:  # EOF: the command ended, or the channel died with the link
                    break
                if pid is None:
                    pid = pid_after_mark(line, mark)
                    if pid is None:
                        before_mark.append(line)
                    continue
                yield line.decode("utf-8", "replace").rstrip("\r\n")
            if pid is None:  # the shell failed before the script ran: that is the reason
                for line in before_mark:
                    yield line.decode("utf-8", "replace").rstrip("\r\n")
            await proc.wait_closed()
            if proc.exit_status is None and proc.exit_signal is None:
                raise self._lost(cmd)
        finally:
            if proc.exit_status is None:
                await self._end_remote(proc, pid)
            else:
                proc.close()

    # -- files ----------------------------------------------------------------------

    async def home(self) -> str:
        if self._home is None:
            result = await self.run('printf %s "$HOME"', timeout=self.settings.command_timeout_s)
            if not result.ok or not result.stdout.startswith("/"):
                raise TransportError(f"Cannot find the home directory on {self.name}.")
            self._home = result.stdout
        return self._home

    async def _abs(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            return (await self.home()).rstrip("/") + path[1:]
        return path

    @asynccontextmanager
    async def _sftp(
        self, conn: asyncssh.SSHClientConnection
    ) -> AsyncIterator[asyncssh.SFTPClient | None]:
        """An SFTP session on `conn`, or None when its sshd has no SFTP subsystem (asked
        once per connection: a reconnect may reach a differently configured host)."""
        if self._no_sftp is conn:
            yield None
            return
        try:
            client = await conn.start_sftp_client()
        except asyncssh.ChannelOpenError as exc:
            if exc.code != OPEN_REQUEST_SESSION_FAILED or conn.is_closed():
                raise
            self._no_sftp = conn
            yield None
            return
        async with client:
            yield client

    async def read_file(self, path: str) -> bytes:
        conn = await self.connection()
        path = await self._abs(path)
        try:
            async with self._sftp(conn) as sftp:
                if sftp is not None:
                    async with sftp.open(path, "rb") as fh:
                        return await fh.read()
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(path) from None
        except asyncssh.SFTPError as exc:
            raise TransportError(f"Cannot read {path} on {self.name}: {exc.reason}.") from None
        except (
            asyncssh.ChannelOpenError,
            asyncssh.misc.ConnectionLost,
            asyncssh.DisconnectError,
            OSError,
        ):
            raise self._lost(["sftp", "read", path]) from None
        # Outside the try: its FileNotFoundError is an OSError, not a lost link.
        return await self._read_over_exec(path)

    async def _read_over_exec(self, path: str) -> bytes:
        code, out, err = await self._execute(
            read_script(path), timeout=self.settings.command_timeout_s
        )
        if code == MISSING:
            raise FileNotFoundError(path)
        if code != 0:
            raise TransportError(f"Cannot read {path} on {self.name}: {_reason(err, code)}.")
        return out

    async def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        conn = await self.connection()
        path = await self._abs(path)
        try:
            async with self._sftp(conn) as sftp:
                if sftp is not None:
                    return await self._write_over_sftp(sftp, path, data, mode)
        except asyncssh.SFTPError as exc:
            raise TransportError(f"Cannot write {path} on {self.name}: {exc.reason}.") from None
        except (
            asyncssh.ChannelOpenError,
            asyncssh.misc.ConnectionLost,
            asyncssh.DisconnectError,
            OSError,
        ):
            raise self._lost(["sftp", "write", path]) from None
        await self._write_over_exec(path, data, mode)

    @staticmethod
    async def _write_over_sftp(
        sftp: asyncssh.SFTPClient, path: str, data: bytes, mode: int
    ) -> None:
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        if directory:
            await sftp.makedirs(directory, exist_ok=True)
        try:
            async with sftp.open(tmp, "wb") as fh:
                await fh.write(data)
            await sftp.chmod(tmp, mode)
            # posix-rename replaces atomically; plain SFTP rename refuses to overwrite.
            await sftp.posix_rename(tmp, path)
        except BaseException:
            with suppress(asyncssh.SFTPError, asyncssh.Error, OSError):
                await sftp.remove(tmp)
            raise

    async def _write_over_exec(self, path: str, data: bytes, mode: int) -> None:
        code, _, err = await self._execute(
            write_script(path, mode), input=data, timeout=self.settings.command_timeout_s
        )
        if code != 0:
            raise TransportError(f"Cannot write {path} on {self.name}: {_reason(err, code)}.")

    # -- ports ----------------------------------------------------------------------

    @asynccontextmanager
    async def forward(self, port: int, host: str = "127.0.0.1") -> AsyncIterator[int]:
        conn = await self.connection()
        try:
            listener = await conn.forward_local_port("127.0.0.1", 0, host, port)
        except (asyncssh.Error, OSError) as exc:
            raise TransportError(
                f"Cannot forward a local port to {host}:{port} on {self.name}: {exc}."
            ) from None
        try:
            yield listener.get_port()
        finally:
            listener.close()
