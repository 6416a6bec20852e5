"""The link to the host: SSH up with its host key known, `sudo -n` where the profile's
systemd unit needs it, what the login shell's rc files print before our commands, and
whether files go over SFTP.

The host key goes through the same confirmation every command uses (a terminal asks,
`--accept-new-host-key` trusts and says so, anything else refuses): an unknown key is
never accepted silently, and a refused one is this report's failure with its
fingerprint, not an error that hides the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from console.config import HostProfile
from console.doctor.check import Check, fail, guarded, ok, skip, warn
from console.errors import TransportError
from console.transport import HostKeyChanged, HostKeyInfo, Transport, UnknownHostKey

if TYPE_CHECKING:
    from console.transport.ssh_facts import SSHLinkFacts

NOT_LOCAL = "this machine: no SSH link"
NOT_REACHED = "not checked: the host was not reached"
LINK_FIX = "run doctor again once the link is back"
AFTER_REACH = ("sudo", "login-shell", "sftp")


async def link_checks(
    transport: Transport, profile: HostProfile, trusted: Sequence[HostKeyInfo], timeout: float
) -> tuple[list[Check], bool]:
    """The link's checks, and whether the host was reached (the rest needs it)."""
    reached, first = await _reach(transport, profile, trusted, timeout)
    if not reached:
        return [*first, *(skip(name, NOT_REACHED) for name in AFTER_REACH)], False
    facts = _facts(transport, profile)
    rest = [
        await guarded("sudo", _sudo(transport, profile, timeout), LINK_FIX),
        await guarded("login-shell", _login_shell(facts), LINK_FIX),
        await guarded("sftp", _sftp(transport.name, facts), LINK_FIX),
    ]
    return [*first, *rest], True


def _facts(transport: Transport, profile: HostProfile) -> SSHLinkFacts | None:
    """What the SSH link can say about itself; None for this machine. (Loaded only for
    an SSH host: `local` never imports the SSH stack.)"""
    if profile.ssh is None:
        return None
    from console.transport.ssh import SSHTransport
    from console.transport.ssh_facts import SSHLinkFacts

    return SSHLinkFacts(transport) if isinstance(transport, SSHTransport) else None


async def _reach(
    transport: Transport, profile: HostProfile, trusted: Sequence[HostKeyInfo], timeout: float
) -> tuple[bool, list[Check]]:
    host = profile.name
    if profile.ssh is None:
        return True, [ok("ssh", NOT_LOCAL), skip("host-key", NOT_LOCAL)]
    where = profile.ssh.destination
    try:
        result = await transport.run("true", timeout=timeout)
    except UnknownHostKey as exc:
        fix = (
            "compare the fingerprint with the host's own (`ssh-keygen -lf` on its "
            f"/etc/ssh/ssh_host_*_key.pub), then run `specconsole doctor {host}` on a terminal "
            "and trust it, or pass --accept-new-host-key"
        )
        return False, [
            skip("ssh", f"not logged in to {where}: its host key is not trusted"),
            fail("host-key", f"unknown: {exc.info.describe()} is not in {exc.known_hosts_file}",
                 fix),
        ]  # fmt: skip
    except HostKeyChanged as exc:
        fix = (
            f"if the host was reinstalled, remove its old entry from {exc.known_hosts_file} "
            f"(`ssh-keygen -R '{exc.info.known_hosts_name}' -f {exc.known_hosts_file}`); "
            "otherwise do not connect"
        )
        return False, [
            skip("ssh", f"not logged in to {where}: its host key changed"),
            fail("host-key", f"changed: {where} now presents {exc.info.describe()}, which "
                 "does not match the recorded one", fix),
        ]  # fmt: skip
    except TransportError as exc:
        fix = (
            "check that the host is up and the profile's destination, user and key "
            f"(`specconsole hosts show {host}`)"
        )
        return False, [fail("ssh", str(exc).rstrip("."), fix), skip("host-key", NOT_REACHED)]
    if not result.ok:
        why = result.last_line() or f"exit {result.exit_code}"
        fix = "the login shell fails before any command runs: check its rc files"
        return False, [fail("ssh", f"logged in to {where}, but `true` failed: {why}", fix),
                       ok("host-key", "known")]  # fmt: skip
    key = (
        f"newly trusted and recorded: {', '.join(info.describe() for info in trusted)}"
        if trusted
        else "known (recorded in known_hosts)"
    )
    return True, [ok("ssh", f"logged in to {where}"), ok("host-key", key)]


async def _sudo(transport: Transport, profile: HostProfile, timeout: float) -> Check:
    supervisor = profile.supervisor
    if supervisor.kind != "systemd" or not supervisor.sudo:
        return skip("sudo", "not needed: the profile's supervisor runs nothing through sudo")
    user_unit = 'a user-scope unit (`scope = "user"`, `sudo = false` under [supervisor])'
    result = await transport.run(["sudo", "-n", "true"], timeout=timeout)
    if result.ok:
        return ok("sudo", "`sudo -n true` works (no password asked)")
    if result.exit_code == 127:
        return fail("sudo", f"sudo is not installed on {transport.name}",
                    f"install sudo there, or run the engine as {user_unit}")  # fmt: skip
    why = result.last_line() or f"exit {result.exit_code}"
    return fail(
        "sudo",
        f"`sudo -n true` failed ({why}): the unit's systemctl and journalctl calls need it",
        "give this user passwordless sudo for systemctl and journalctl (a NOPASSWD rule in "
        f"/etc/sudoers.d), or run the engine as {user_unit}",
    )


async def _login_shell(facts: SSHLinkFacts | None) -> Check:
    if facts is None:
        return skip("login-shell", "this machine: commands run without a login shell")
    out, err = await facts.login_output()
    lines = [line for text in (out, err) for line in text.splitlines() if line.strip()]
    if not lines:
        return ok("login-shell", "its rc files print nothing before a command")
    where = "stdout and stderr" if out and err else "stdout" if out else "stderr"
    return warn(
        "login-shell",
        f"its rc files print {len(lines)} line(s) on {where} before every command "
        f"({lines[0][:60]!r}); the console cuts them off, so nothing breaks",
        "move the echo under an interactive-shell guard (`case $- in *i*) ...;; esac` in "
        "~/.bashrc; ~/.ssh/rc, ~/.zshenv and fish's config.fish run for every command too)",
    )


async def _sftp(host: str, facts: SSHLinkFacts | None) -> Check:
    if facts is None:
        return skip("sftp", "this machine: files are read and written directly")
    if await facts.has_sftp():
        return ok("sftp", "sshd offers SFTP: files go over it")
    return warn(
        "sftp",
        f"sshd on {host} offers no SFTP subsystem: files go over the command channel "
        "instead, which works",
        "nothing needs it; for SFTP add `Subsystem sftp internal-sftp` to the host's sshd_config",
    )
