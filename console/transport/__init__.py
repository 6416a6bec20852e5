"""How commands, files and ports reach a host: `local` or SSH, one protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from console.config import HostProfile
from console.settings import ConsoleSettings

# Before anything below that may import asyncssh (see quiet_crypto).
from console.transport import quiet_crypto  # noqa: F401
from console.transport.base import (
    Command,
    CommandFailed,
    CommandResult,
    CommandTimeout,
    LinkLost,
    Transport,
    as_script,
    check,
    expand_path,
)
from console.transport.hostkey_types import (
    ConfirmHostKey,
    HostKeyChanged,
    HostKeyInfo,
    UnknownHostKey,
)
from console.transport.local import LocalTransport

if TYPE_CHECKING:
    from console.transport.ssh import SSHOptions, SSHTransport

# The SSH stack (asyncssh and its crypto) loads on first use: `connect local` and every
# command on a local host start without it.
_LAZY = {"SSHOptions", "SSHTransport"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from console.transport import ssh

        return getattr(ssh, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_transport(
    profile: HostProfile,
    *,
    confirm_host_key: ConfirmHostKey | None = None,
    settings: ConsoleSettings | None = None,
) -> Transport:
    """The transport for a profile; SSH connects lazily on first use."""
    if profile.ssh is None:
        return LocalTransport(profile.name)
    from console.transport.ssh import SSHOptions, SSHTransport

    ssh = profile.ssh
    options = SSHOptions(
        destination=ssh.destination,
        config_paths=ssh.config,
        known_hosts=ssh.known_hosts,
        client_keys=ssh.identity_file,
        use_agent=ssh.use_agent,
        connect_timeout=ssh.connect_timeout,
        keepalive_interval=ssh.keepalive_interval,
    )
    return SSHTransport(
        options, name=profile.name, confirm_host_key=confirm_host_key, settings=settings
    )


__all__ = [
    "Command",
    "CommandFailed",
    "CommandResult",
    "CommandTimeout",
    "ConfirmHostKey",
    "HostKeyChanged",
    "HostKeyInfo",
    "LinkLost",
    "LocalTransport",
    "SSHOptions",
    "SSHTransport",
    "Transport",
    "UnknownHostKey",
    "as_script",
    "check",
    "expand_path",
    "open_transport",
]
