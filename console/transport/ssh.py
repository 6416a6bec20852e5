"""SSH hosts via asyncssh, behaving like OpenSSH's client where operators expect it to.

- `~/.ssh/config` (HostName, User, Port, IdentityFile, ProxyJump, UserKnownHostsFile,
  ConnectTimeout, ServerAliveInterval) is honoured; asyncssh resolves most of it, but jump
  hosts are connected hop by hop here so that every hop gets the same host-key checks
  and explicit options (asyncssh's own ProxyJump would read the default ~/.ssh files).
- Host keys: see `hostkeys.py`. Unknown keys need a confirmation, changed keys are refused.
- A dropped link fails the command in flight with `LinkLost`; the next call reconnects
  with backoff. Keepalives make a silently dead link visible.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import posixpath
import secrets
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import asyncssh
from asyncssh.config import SSHClientConfig

from console.errors import TransportError
from console.transport.base import Command, CommandResult, CommandTimeout, LinkLost, describe
from console.transport.hostkeys import (
    ConfirmHostKey,
    KnownHostsStore,
    RecordingClient,
    UnknownHostKey,
    classify_rejection,
)

_MAX_HOPS = 8
_PID_MARK = "__specconsole_pid__="


@dataclass
class SSHOptions:
    """How to reach one SSH destination. `None` means "what OpenSSH would use"."""

    destination: str  # `alias`, `host`, `user@host` or `user@host:port`
    config_paths: list[str] | None = None  # default: ~/.ssh/config when it exists
    known_hosts: list[str] | None = (
        None  # default: config's UserKnownHostsFile or ~/.ssh/known_hosts
    )
    client_keys: list[str] | None = None  # default: config's IdentityFile / ~/.ssh/id_*
    use_agent: bool = True
    connect_timeout: float = 15.0
    keepalive_interval: float = 15.0
    keepalive_count_max: int = 3
    reconnect_attempts: int = 3
    reconnect_backoff: float = 0.5  # seconds, doubled per attempt
    extra: dict[str, object] = field(default_factory=dict)  # passed to asyncssh.connect


@dataclass(frozen=True)
class _Hop:
    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> _Hop:
        text = text.strip()
        if text.startswith("ssh://"):
            text = text[len("ssh://") :]
        user = None
        if "@" in text:
            user, text = text.rsplit("@", 1)
        port = None
        if text.startswith("[") and "]" in text:  # [v6addr]:port
            host, _, rest = text[1:].partition("]")
            if rest.startswith(":"):
                port = int(rest[1:])
        elif text.count(":") == 1:
            host, port_text = text.split(":")
            port = int(port_text)
        else:
            host = text
        if not host:
            raise TransportError(f"SSH destination {text!r} has no host name.")
        return cls(host=host, user=user, port=port)

    def __str__(self) -> str:
        out = f"{self.user}@{self.host}" if self.user else self.host
        return f"{out}:{self.port}" if self.port else out


class SSHTransport:
    """One SSH host; the connection is opened lazily and reopened after a drop."""

    def __init__(
        self,
        options: SSHOptions,
        *,
        name: str | None = None,
        confirm_host_key: ConfirmHostKey | None = None,
    ) -> None:
        self.options = options
        self.name = name or options.destination
        self.confirm_host_key = confirm_host_key
        self._config_paths = self._default_config_paths()
        self._conns: list[asyncssh.SSHClientConnection] = []
        self._clients: list[RecordingClient] = []
        self._lock = asyncio.Lock()
        self._home: str | None = None

    # -- connection -----------------------------------------------------------------

    def _default_config_paths(self) -> list[str]:
        if self.options.config_paths is not None:
            return [os.path.expanduser(p) for p in self.options.config_paths]
        user_config = os.path.expanduser("~/.ssh/config")
        return [user_config] if os.path.exists(user_config) else []

    def _config_for(self, hop: _Hop) -> SSHClientConfig:
        try:
            return SSHClientConfig.load(
                None, self._config_paths, False, False, False,
                getpass.getuser(), hop.user or (), hop.host, hop.port or (),
            )  # fmt: skip
        except (OSError, asyncssh.ConfigParseError) as exc:
            raise TransportError(f"Cannot read SSH config {self._config_paths}: {exc}.") from None

    def _route(self, hop: _Hop, depth: int = 0) -> list[_Hop]:
        """The hops to connect through, last one the destination (ProxyJump, recursively)."""
        if depth > _MAX_HOPS:
            raise TransportError(f"ProxyJump for {self.name} nests deeper than {_MAX_HOPS} hops.")
        jump = self._config_for(hop).get("ProxyJump")
        if not jump or str(jump).lower() == "none":
            return [hop]
        jumps = [_Hop.parse(part) for part in str(jump).split(",")]
        return [*self._route(jumps[0], depth + 1), *jumps[1:], hop]

    def _known_hosts_store(self, config: SSHClientConfig) -> KnownHostsStore:
        if self.options.known_hosts is not None:
            return KnownHostsStore(self.options.known_hosts)
        from_config = config.get("UserKnownHostsFile")
        if from_config:
            paths = [from_config] if isinstance(from_config, str) else list(from_config)
            return KnownHostsStore([str(p) for p in paths])
        return KnownHostsStore(["~/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"])

    async def _connect_hop(
        self, hop: _Hop, tunnel: asyncssh.SSHClientConnection | None
    ) -> asyncssh.SSHClientConnection:
        config = self._config_for(hop)
        store = self._known_hosts_store(config)
        client = RecordingClient()
        opts = self.options
        kwargs: dict[str, object] = {
            "config": self._config_paths,
            # An explicit tunnel (or None) stops asyncssh applying ProxyJump itself.
            "tunnel": tunnel,
            "known_hosts": store.lookup,
            "connect_timeout": opts.connect_timeout,
            "keepalive_interval": opts.keepalive_interval,
            "keepalive_count_max": opts.keepalive_count_max,
            **opts.extra,
        }
        if opts.client_keys is not None:
            kwargs["client_keys"] = [os.path.expanduser(k) for k in opts.client_keys]
        if not opts.use_agent:
            kwargs["agent_path"] = None
        if hop.user:
            kwargs["username"] = hop.user
        if hop.port:
            kwargs["port"] = hop.port
        where = str(hop)
        try:
            conn = await asyncio.wait_for(
                asyncssh.connect(hop.host, client_factory=lambda: client, **kwargs),
                opts.connect_timeout + 5,
            )
        except asyncssh.HostKeyNotVerifiable:
            raise classify_rejection(where, store, client) from None
        except asyncssh.PermissionDenied:
            raise TransportError(
                f"SSH login to {where} was refused; check the user, key (IdentityFile) "
                "or ssh agent for that host."
            ) from None
        except (TimeoutError, asyncssh.misc.ConnectionLost) as exc:
            raise _Transient(f"Connecting to {where} timed out or was cut ({exc}).") from None
        except (OSError, asyncssh.DisconnectError) as exc:
            raise _Transient(f"Could not reach {where}: {exc}.") from None
        except asyncssh.Error as exc:
            raise TransportError(f"SSH to {where} failed: {exc}.") from None
        self._clients.append(client)
        return conn

    async def _connect_route(self) -> None:
        route = self._route(_Hop.parse(self.options.destination))
        tunnel: asyncssh.SSHClientConnection | None = None
        conns: list[asyncssh.SSHClientConnection] = []
        try:
            for hop in route:
                while True:
                    try:
                        tunnel = await self._connect_hop(hop, tunnel)
                        break
                    except UnknownHostKey as unknown:
                        if self.confirm_host_key is None or not await self.confirm_host_key(
                            unknown.info
                        ):
                            raise
                        self._record_key(hop, unknown)
                conns.append(tunnel)
        except BaseException:
            for conn in reversed(conns):
                conn.close()
            raise
        self._conns = conns

    def _record_key(self, hop: _Hop, unknown: UnknownHostKey) -> None:
        store = KnownHostsStore([unknown.known_hosts_file])
        name = unknown.info.known_hosts_name
        host, port = name[1:].split("]:") if name.startswith("[") else (name, None)
        store.add(host, int(port) if port else None, unknown.info.key)

    def _alive(self) -> bool:
        return bool(self._conns) and not any(c.closed for c in self._clients)

    def is_connected(self) -> bool:
        """Whether the SSH connection is up now (a port forward over it still works)."""
        return self._alive()

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The open connection to the destination, (re)connecting with backoff if needed."""
        async with self._lock:
            if self._alive():
                return self._conns[-1]
            await self._drop()
            delay = self.options.reconnect_backoff
            for attempt in range(1, self.options.reconnect_attempts + 1):
                try:
                    await self._connect_route()
                    return self._conns[-1]
                except _Transient as exc:
                    if attempt == self.options.reconnect_attempts:
                        raise TransportError(
                            f"{exc} Gave up after {attempt} attempts; check that the host is up."
                        ) from None
                    await asyncio.sleep(delay)
                    delay *= 2
            raise AssertionError("unreachable")

    async def _drop(self) -> None:
        for conn in reversed(self._conns):
            conn.close()
        self._conns, self._clients = [], []

    async def close(self) -> None:
        async with self._lock:
            conns = list(self._conns)
            await self._drop()
        for conn in conns:
            with suppress(TimeoutError, asyncssh.Error, OSError):
                await asyncio.wait_for(conn.wait_closed(), 5)

    def _lost(self, cmd: Command) -> LinkLost:
        return LinkLost(
            f"The connection to {self.name} dropped while running `{describe(cmd)}`; "
            "it will reconnect on the next command."
        )

    # -- commands -------------------------------------------------------------------

    @staticmethod
    def _remote(cmd: Command) -> str:
        # The remote login shell parses the command line; wrap scripts in sh so their
        # meaning does not depend on that shell, and quote argv element by element.
        return f"sh -c {shlex.quote(cmd)}" if isinstance(cmd, str) else shlex.join(cmd)

    @staticmethod
    def _with_pid(cmd: Command, to_stderr: bool) -> str:
        # The command first reports its pid, so that ending it early (a timeout, a closed
        # stream) can kill it on the host: sshd ignores SSH "signal" requests for root
        # sessions, and closing the channel alone leaves e.g. a quiet `tail -f` running.
        inner = cmd if isinstance(cmd, str) else shlex.join(cmd)
        redirect = " >&2" if to_stderr else ""
        return f"echo {_PID_MARK}$${redirect}; exec sh -c {shlex.quote(inner)}"

    async def _end_remote(self, proc: asyncssh.SSHClientProcess, pid: str | None) -> None:
        with suppress(asyncssh.Error, OSError):
            proc.send_signal("TERM")
        proc.close()
        if pid and pid.isdigit() and self._alive():
            # The session's process group when sh leads it, else just the command.
            with suppress(TransportError, asyncssh.Error, OSError, TimeoutError):
                await self.run(
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
        _track: bool = True,
    ) -> CommandResult:
        conn = await self.connection()
        remote = self._remote(self._with_pid(cmd, to_stderr=True) if _track else cmd)
        try:
            proc = await conn.create_process(remote, encoding="utf-8", errors="replace")
        except (asyncssh.ChannelOpenError, asyncssh.misc.ConnectionLost, OSError):
            raise self._lost(cmd) from None
        pid: str | None = None
        stderr_head = ""
        try:
            if input is not None:
                proc.stdin.write(input)
            proc.stdin.write_eof()
            async with asyncio.timeout(timeout):
                if _track:
                    first = await proc.stderr.readline()
                    if first.startswith(_PID_MARK):
                        pid = first[len(_PID_MARK) :].strip()
                    else:
                        stderr_head = first
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
        return CommandResult(code, str(done.stdout or ""), stderr_head + str(done.stderr or ""))

    async def stream(self, cmd: Command) -> AsyncIterator[str]:
        conn = await self.connection()
        try:
            proc = await conn.create_process(
                self._remote(self._with_pid(cmd, to_stderr=False)),
                encoding="utf-8",
                errors="replace",
                stderr=asyncssh.STDOUT,
            )
        except (asyncssh.ChannelOpenError, asyncssh.misc.ConnectionLost, OSError):
            raise self._lost(cmd) from None
        pid: str | None = None
        try:
            proc.stdin.write_eof()
            while True:
                try:
                    line = await proc.stdout.readline()
                except (asyncssh.misc.ConnectionLost, asyncssh.DisconnectError, OSError):
                    raise self._lost(cmd) from None
                if not line:  # EOF: the command ended, or the channel died with the link
                    break
                if pid is None and line.startswith(_PID_MARK):
                    pid = line[len(_PID_MARK) :].strip()
                    continue
                yield line.rstrip("\r\n")
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
            result = await self.run('printf %s "$HOME"', timeout=30)
            if not result.ok or not result.stdout.startswith("/"):
                raise TransportError(f"Cannot find the home directory on {self.name}.")
            self._home = result.stdout
        return self._home

    async def _abs(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            return (await self.home()).rstrip("/") + path[1:]
        return path

    async def read_file(self, path: str) -> bytes:
        conn = await self.connection()
        path = await self._abs(path)
        try:
            async with conn.start_sftp_client() as sftp, sftp.open(path, "rb") as fh:
                return await fh.read()
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(path) from None
        except asyncssh.SFTPError as exc:
            raise TransportError(f"Cannot read {path} on {self.name}: {exc.reason}.") from None
        except (asyncssh.misc.ConnectionLost, asyncssh.DisconnectError, OSError):
            raise self._lost(["sftp", "read", path]) from None

    async def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        conn = await self.connection()
        path = await self._abs(path)
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            async with conn.start_sftp_client() as sftp:
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
        except asyncssh.SFTPError as exc:
            raise TransportError(f"Cannot write {path} on {self.name}: {exc.reason}.") from None
        except (asyncssh.misc.ConnectionLost, asyncssh.DisconnectError, OSError):
            raise self._lost(["sftp", "write", path]) from None

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


class _Transient(TransportError):
    """A connect failure worth retrying (network), unlike auth or host-key failures."""
