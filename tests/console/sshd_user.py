"""The test sshd, logged into as an ordinary (non-root) user, as on a shared GPU host.

Tests and CI run as root; a real host's operator is not root: their shell sees only their
own processes in /proc, cannot signal others' and writes only their own files. So the
fixture adds one user (`specop`, once per machine, safe under two pytest-xdist workers:
`useradd` runs under an exclusive `flock`), lets it run this interpreter (the suite's
interpreter may live under a root-only directory: its missing search bits for others are
added for the test and put back after), and starts the shared `run_sshd` in a directory
that user may read (sshd reads authorized_keys as the user logging in).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.console.sshd import SSHServer, run_sshd

USER = "specop"
_USER_LOCK = "/tmp/specconsole-test-user.lock"


@dataclass
class UserSSHD:
    server: SSHServer
    user: str
    home: str
    ssh_config: Path  # defines `userhost`: the server as `user`


def ensure_user(name: str = USER) -> str:
    """The user's home directory; the user is created the first time (idempotent)."""
    with open(_USER_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return pwd.getpwnam(name).pw_dir
        except KeyError:
            # `-p '*'`: no password, but not a locked account (sshd refuses those).
            subprocess.run(
                ["useradd", "--create-home", "--shell", "/bin/sh", "-p", "*", name],
                check=True, capture_output=True,
            )  # fmt: skip
            return pwd.getpwnam(name).pw_dir


def _can_run(user: str, path: str) -> bool:
    probe = subprocess.run(["/bin/sh", "-c", 'test -x "$1"', "sh", path], user=user)
    return probe.returncode == 0


@contextlib.contextmanager
def interpreter_for(user: str) -> Iterator[None]:
    """Let `user` reach this interpreter for the block: add o+x to the directories on its
    path that lack it, and take it away again after."""
    changed: list[tuple[Path, int]] = []
    try:
        if not _can_run(user, sys.executable):
            for parent in reversed(Path(sys.executable).parents):
                mode = parent.stat().st_mode
                if not mode & stat.S_IXOTH:
                    os.chmod(parent, mode | stat.S_IXOTH)
                    changed.append((parent, mode))
        yield
    finally:
        for path, mode in changed:
            os.chmod(path, stat.S_IMODE(mode))


@contextlib.contextmanager
def run_user_sshd(user: str = USER) -> Iterator[UserSSHD]:
    home = ensure_user(user)
    root = Path(tempfile.mkdtemp(prefix="specconsole-user-sshd-"))
    os.chmod(root, 0o755)
    with interpreter_for(user), run_sshd(root) as server:
        ssh_config = root / "user_ssh_config"
        ssh_config.write_text(
            f"Host userhost\n    HostName 127.0.0.1\n    Port {server.port}\n"
            f"    User {user}\n    IdentityFile {server.client_key}\n"
        )
        yield UserSSHD(server, user, home, ssh_config)
