"""What an SSH link is like, for `doctor`: what the login shell's rc files print before
each command (which `SSHTransport` cuts off, see `remote_shell`), and whether its sshd
offers SFTP (without it files go over the command channel, see `exec_files`)."""

from __future__ import annotations

import asyncssh

from console.transport.base import CommandTimeout, LinkLost
from console.transport.remote_shell import login_shell_line, marked_script, new_mark
from console.transport.ssh import SSHTransport


class SSHLinkFacts:
    def __init__(self, transport: SSHTransport) -> None:
        self.transport = transport

    async def login_output(self) -> tuple[str, str]:
        """What the rc files print on stdout and on stderr before a command of ours:
        `true` run as every command is, with what precedes its markers kept."""
        transport = self.transport
        conn = await transport.connection()
        mark = new_mark()
        line = login_shell_line(marked_script("true", mark, merge=False))
        try:
            done = await conn.run(line, encoding=None, timeout=transport.settings.command_timeout_s)
        except asyncssh.TimeoutError:
            raise CommandTimeout(f"A plain `true` on {transport.name} did not finish.") from None
        except (asyncssh.Error, OSError):
            raise LinkLost(f"The connection to {transport.name} dropped.") from None

        def before_mark(data: object) -> str:
            raw = bytes(data or b"")  # type: ignore[call-overload]
            at = raw.find(mark)
            return (raw if at < 0 else raw[:at]).decode("utf-8", "replace").strip()

        return before_mark(done.stdout), before_mark(done.stderr)

    async def has_sftp(self) -> bool:
        """Whether sshd offers SFTP, asked the way every file read asks it."""
        transport = self.transport
        conn = await transport.connection()
        try:
            async with transport._sftp(conn) as sftp:
                return sftp is not None
        except (asyncssh.Error, OSError):
            raise LinkLost(f"The connection to {transport.name} dropped.") from None
