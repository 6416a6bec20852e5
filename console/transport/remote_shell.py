"""What the host's login shell is handed, and how a command's output is told apart from
what that shell's rc files printed first.

sshd runs every command as `$SHELL -c LINE`, and that shell may be bash (which reads
~/.bashrc even when not interactive), zsh, fish or dash. Managed hosts print welcome
banners, conda notes and motd-style lines from ~/.bashrc or ~/.ssh/rc, on stdout or
stderr, before our command starts. So:

- LINE holds only characters every one of those shells reads alike: the script travels
  base64-encoded in one single-quoted word that `sh` decodes and runs. (`shlex.quote`
  alone is not enough: inside fish's single quotes `\\` and `\\'` are escapes.)
- The script prints a fresh random marker on stdout and on stderr before it runs the
  command; whatever precedes a stream's marker is the rc files' and is dropped.
"""

from __future__ import annotations

import base64
import secrets
import shlex

from console.transport.base import Command


def new_mark() -> bytes:
    """A marker no banner can contain by chance (fresh for every command)."""
    return f"__specconsole_{secrets.token_hex(8)}__".encode()


def login_shell_line(script: str) -> str:
    """The command line for sshd that makes any login shell run `script` under `sh`."""
    encoded = base64.b64encode(script.encode()).decode("ascii")
    # base64 has no quote, backslash or `$`; the single-quoted word is the same in
    # bash, zsh, dash, ksh, fish and csh. `$(...)` drops only trailing newlines.
    return f"sh -c 'eval \"$(echo {encoded} | base64 -d)\"'"


def print_mark(mark: bytes, *, stderr: bool = False, pid: bool = False) -> str:
    """A `sh` statement that prints the marker line (with the shell's pid after it)."""
    text = mark.decode("ascii")  # [_a-z0-9] only: needs no quoting
    return f"printf '%s\\n' {text}{'$$' if pid else ''}{' >&2' if stderr else ''}"


def after_mark(data: bytes, mark: bytes) -> bytes | None:
    """What follows the marker's line in `data`; None when the marker never came (the
    shell failed before the script ran, and everything it printed is the reason)."""
    at = data.find(mark)
    if at < 0:
        return None
    end = data.find(b"\n", at)
    return b"" if end < 0 else data[end + 1 :]


def pid_after_mark(line: bytes, mark: bytes) -> str | None:
    """The pid on a marker line from `print_mark(pid=True)`, or None if `line` is not it."""
    at = line.find(mark)
    if at < 0:
        return None
    pid = line[at + len(mark) :].strip().decode("ascii", "replace")
    return pid if pid.isdigit() else ""


def marked_script(cmd: Command, mark: bytes, *, merge: bool) -> str:
    """`cmd` as the script a login shell runs: its marker lines first, then the command.

    The marker lines come first, so that whatever the login shell's rc files printed can
    be cut off (`after_mark`); the stderr one (stdout's when `merge`) carries the pid, so
    that ending the command early (a timeout, a closed stream) can kill it on the host:
    sshd ignores SSH "signal" requests for root sessions, and closing the channel alone
    leaves e.g. a quiet `tail -f` running. The command itself runs under `sh -c`, argv
    quoted element by element."""
    inner = cmd if isinstance(cmd, str) else shlex.join(cmd)
    marks = (
        ["exec 2>&1", print_mark(mark, pid=True)]
        if merge
        else [print_mark(mark), print_mark(mark, stderr=True, pid=True)]
    )
    return "; ".join([*marks, f"exec sh -c {shlex.quote(inner)}"])
