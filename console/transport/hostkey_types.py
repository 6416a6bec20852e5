"""What the user is asked or told about a host key: plain types with no SSH library.

Kept apart from `hostkeys` (which needs asyncssh) so that code that only shows a key or
catches a refusal, such as the CLI and the terminal UI, starts without importing the SSH
stack; `connect local` never needs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.errors import TransportError

if TYPE_CHECKING:
    import asyncssh


@dataclass(frozen=True)
class HostKeyInfo:
    """A host key the user is asked about, or told was refused."""

    destination: str  # what the user typed (profile destination or jump host)
    known_hosts_name: str  # how it is recorded, e.g. `[10.0.0.5]:2222`
    key_type: str
    fingerprint: str  # SHA256:...
    key: asyncssh.SSHKey | Any

    def describe(self) -> str:
        return f"{self.key_type} key {self.fingerprint} for {self.known_hosts_name}"


class UnknownHostKey(TransportError):
    """The host presented a key we have no record of; the user must confirm it."""

    def __init__(self, info: HostKeyInfo, known_hosts_file: str) -> None:
        super().__init__(
            f"The host key of {info.destination} is not known ({info.describe()}); "
            "confirm it to connect, or pass --accept-new-host-key if you trust it."
        )
        self.info = info
        self.known_hosts_file = known_hosts_file


class HostKeyChanged(TransportError):
    """The host presented a key different from the recorded one; we refuse."""

    def __init__(self, info: HostKeyInfo, known_hosts_file: str) -> None:
        super().__init__(
            f"The host key of {info.destination} has changed (now {info.describe()}) and "
            f"does not match {known_hosts_file}; refusing to connect. If the change is "
            "expected, remove the old entry from that file."
        )
        self.info = info
        self.known_hosts_file = known_hosts_file


#: called with an unknown key; returns True to trust and record it
ConfirmHostKey = Callable[[HostKeyInfo], Awaitable[bool]]
