"""The SSH connection to one destination: config, ProxyJump route, host keys, reconnects.

`SSHLink` owns everything about being connected (which hops, which keys are trusted,
when to reconnect and how long to wait between attempts); `SSHTransport` (ssh.py) owns
what runs over the link (commands, files, port forwards). Jump hosts are connected hop by
hop here so that every hop gets the same host-key checks and explicit options (asyncssh's
own ProxyJump would read the default ~/.ssh files).
"""

from __future__ import annotations

import asyncio
import getpass
import os
from contextlib import suppress
from dataclasses import dataclass, field

import asyncssh
from asyncssh.config import SSHClientConfig

from console.errors import TransportError
from console.settings import DEFAULT_SETTINGS, Backoff, ConsoleSettings
from console.transport.hostkeys import (
    ConfirmHostKey,
    KnownHostsStore,
    RecordingClient,
    UnknownHostKey,
    classify_rejection,
)

_MAX_HOPS = 8


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
    backoff: Backoff | None = None  # between reconnect attempts; default: the settings'
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


class SSHLink:
    """One destination's connection, opened lazily and reopened after a drop."""

    def __init__(
        self,
        options: SSHOptions,
        *,
        name: str,
        confirm_host_key: ConfirmHostKey | None = None,
        settings: ConsoleSettings | None = None,
    ) -> None:
        self.options = options
        self.name = name
        self.confirm_host_key = confirm_host_key
        self.settings = settings or DEFAULT_SETTINGS
        self._config_paths = self._default_config_paths()
        self.conns: list[asyncssh.SSHClientConnection] = []  # jump hosts, then the destination
        self._clients: list[RecordingClient] = []
        self._lock = asyncio.Lock()

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
        self.conns = conns

    def _record_key(self, hop: _Hop, unknown: UnknownHostKey) -> None:
        store = KnownHostsStore([unknown.known_hosts_file])
        name = unknown.info.known_hosts_name
        host, port = name[1:].split("]:") if name.startswith("[") else (name, None)
        store.add(host, int(port) if port else None, unknown.info.key)

    def alive(self) -> bool:
        return bool(self.conns) and not any(c.closed for c in self._clients)

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The open connection to the destination, (re)connecting with backoff if needed."""
        async with self._lock:
            if self.alive():
                return self.conns[-1]
            await self._drop()
            delays = (self.options.backoff or self.settings.backoff).delays()
            for attempt in range(1, self.options.reconnect_attempts + 1):
                try:
                    await self._connect_route()
                    return self.conns[-1]
                except _Transient as exc:
                    if attempt == self.options.reconnect_attempts:
                        raise TransportError(
                            f"{exc} Gave up after {attempt} attempts; check that the host is up."
                        ) from None
                    await asyncio.sleep(next(delays))
            raise AssertionError("unreachable")

    async def _drop(self) -> None:
        for conn in reversed(self.conns):
            conn.close()
        self.conns, self._clients = [], []

    async def close(self) -> None:
        async with self._lock:
            conns = list(self.conns)
            await self._drop()
        for conn in conns:
            with suppress(TimeoutError, asyncssh.Error, OSError):
                await asyncio.wait_for(conn.wait_closed(), 5)


class _Transient(TransportError):
    """A connect failure worth retrying (network), unlike auth or host-key failures."""
