"""Host key trust: known_hosts lookup, the unknown-vs-changed decision, accepting a key.

asyncssh either trusts a key or fails the handshake. We want OpenSSH's behaviour instead:
an unknown key is shown to the user (fingerprint) and only trusted after they confirm;
a key that differs from a recorded one is refused outright. So the transport hands
asyncssh a lookup function (`KnownHostsStore.lookup`) that records what was asked, and
classifies the failure afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

import asyncssh

from console.errors import TransportError
from console.transport.hostkey_types import (
    ConfirmHostKey,
    HostKeyChanged,
    HostKeyInfo,
    UnknownHostKey,
)

__all__ = ["ConfirmHostKey", "HostKeyChanged", "HostKeyInfo", "KnownHostsStore", "UnknownHostKey"]


def known_hosts_name(host: str, port: int | None) -> str:
    """OpenSSH's spelling of a host in known_hosts: bare for port 22, else `[host]:port`."""
    return host if port in (None, 22) else f"[{host}]:{port}"


class KnownHostsStore:
    """The known_hosts files for one connection: read all of them, append to the first."""

    def __init__(self, paths: list[str]) -> None:
        if not paths:
            raise ValueError("at least one known_hosts path is needed")
        self.paths = [os.path.expanduser(p) for p in paths]
        self._known = asyncssh.import_known_hosts(self._read_all())
        #: the (host, addr, port) asyncssh last looked up, for classifying a failure
        self.last_lookup: tuple[str, str, int | None] | None = None

    def _read_all(self) -> str:
        chunks = []
        for path in self.paths:
            try:
                chunks.append(Path(path).read_text())
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise TransportError(f"Cannot read known_hosts file {path}: {exc}.") from None
        return "\n".join(chunks)

    def lookup(self, host: str, addr: str, port: int | None) -> tuple:
        """asyncssh's `known_hosts` callable: trusted keys etc. for this host."""
        self.last_lookup = (host, addr, port)
        return self._known.match(host, addr, port)

    def has_entry(self, host: str, addr: str, port: int | None) -> bool:
        trusted, ca_keys, *_ = self._known.match(host, addr, port)
        return bool(trusted or ca_keys)

    def add(self, host: str, port: int | None, key: asyncssh.SSHKey) -> None:
        """Record a key the user accepted (OpenSSH's `accept-new`)."""
        path = Path(self.paths[0])
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        line = (
            f"{known_hosts_name(host, port)} {key.export_public_key('openssh').decode().strip()}\n"
        )
        existing = path.read_text() if path.exists() else ""
        if existing and not existing.endswith("\n"):
            line = "\n" + line
        with path.open("a") as fh:
            fh.write(line)
        self._known = asyncssh.import_known_hosts(self._read_all())


class RecordingClient(asyncssh.SSHClient):
    """Captures the presented host key when asyncssh does not trust it."""

    def __init__(self) -> None:
        self.rejected_key: asyncssh.SSHKey | None = None
        self.lost: BaseException | None = None
        self.closed = False

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        self.rejected_key = key
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc


def classify_rejection(
    destination: str, store: KnownHostsStore, client: RecordingClient
) -> TransportError:
    """Turn asyncssh's HostKeyNotVerifiable into unknown-or-changed, with the fingerprint."""
    key = client.rejected_key
    if key is None or store.last_lookup is None:
        return TransportError(f"The host key of {destination} could not be verified.")
    host, addr, port = store.last_lookup
    info = HostKeyInfo(
        destination=destination,
        known_hosts_name=known_hosts_name(host, port),
        key_type=key.get_algorithm(),
        fingerprint=key.get_fingerprint("sha256"),
        key=key,
    )
    if store.has_entry(host, addr, port):
        return HostKeyChanged(info, store.paths[0])
    return UnknownHostKey(info, store.paths[0])
