"""The test sshd logged into as users whose login shells print banners, as managed GPU
hosts do: one user per login shell (bash, dash, zsh, fish; all four under CI), each with
rc files that write a line to stdout and another to stderr before any command of ours runs.

bash reads ~/.bashrc even for `bash -c` when sshd starts it, so its banner sits above the
usual "not interactive: return" guard; zsh reads ~/.zshenv and fish its config.fish for
every `-c`. dash reads no rc file for `dash -c`: its banner comes from ~/.ssh/rc, which
sshd runs before every command whatever the login shell, its output on the session's. The
users are created with `useradd` under an exclusive `flock` (two pytest processes may ask
at once); the suite runs as root in CI.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.console.conftest import require_sshd
from tests.console.sshd import SSHServer, run_sshd

# Every one is required under CI (.ci/run installs zsh and fish); on a developer's machine
# bash and dash are, and zsh and fish run when installed.
SHELLS = {"bash": "/bin/bash", "dash": "/bin/dash", "zsh": "/usr/bin/zsh", "fish": "/usr/bin/fish"}
TEST_DIR = "specconsole-test"  # under each user's home: the tests write only there
_LOCK = "/tmp/specconsole-test-shells.lock"

# What each rc file prints: the tests check that none of it reaches a command's output.
BANNER_OUT = "Welcome to the managed GPU cluster (stdout banner)"
BANNER_ERR = "conda: base environment activated (stderr banner)"

_BASHRC = f"""# A managed host's .bashrc: a banner first, then the usual guard.
echo '{BANNER_OUT}'
echo '{BANNER_ERR}' >&2
case $- in *i*) ;; *) return ;; esac
"""
# zsh reads ~/.zshenv and fish its config.fish for every `-c`, interactive or not.
_ZSHENV = f"""echo '{BANNER_OUT} from .zshenv'
echo '{BANNER_ERR} from .zshenv' >&2
"""
_FISH_CONFIG = f"""echo '{BANNER_OUT} from config.fish'
echo '{BANNER_ERR} from config.fish' >&2
"""
_SSH_RC = f"""echo '{BANNER_OUT} from ~/.ssh/rc'
echo '{BANNER_ERR} from ~/.ssh/rc' >&2
"""


@dataclass
class ShellUser:
    name: str
    shell: str
    home: str
    alias: str  # the Host in `ssh_config` that logs in as this user


@dataclass
class ShellsSSHD:
    server: SSHServer
    users: dict[str, ShellUser]  # by shell name: "bash", "dash", "zsh", "fish"
    ssh_config: Path

    def user(self, shell: str) -> ShellUser:
        """The user for `shell`; skips when that shell is not installed (never a required
        one under CI: `run_shells_sshd` fails first)."""
        if shell not in self.users:
            pytest.skip(f"{SHELLS[shell]} is not installed")
        return self.users[shell]


def need_root() -> None:
    """Creating users needs root: skip without it on a developer's machine, fail in CI."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the login-shell tests create users and need root under CI=true")
        pytest.skip("the login-shell tests create users: run them as root")


def ensure_user(name: str, shell: str) -> str:
    """The user's home; the user is created (or given `shell`) the first time."""
    with open(_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            # `-p '*'`: no password, but not a locked account (sshd refuses those).
            subprocess.run(
                ["useradd", "--create-home", "--shell", shell, "-p", "*", name],
                check=True, capture_output=True,
            )  # fmt: skip
            entry = pwd.getpwnam(name)
        if entry.pw_shell != shell:
            subprocess.run(["usermod", "--shell", shell, name], check=True, capture_output=True)
        return entry.pw_dir


def _write_owned(home: str, relative: str, text: str, user: str) -> None:
    path = Path(home, relative)
    entry = pwd.getpwnam(user)
    for parent in reversed(path.relative_to(home).parents[:-1]):
        Path(home, parent).mkdir(mode=0o700, exist_ok=True)
        os.chown(Path(home, parent), entry.pw_uid, entry.pw_gid)
    path.write_text(text)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _can_run(user: str, path: str) -> bool:
    probe = subprocess.run(["/bin/sh", "-c", 'test -x "$1"', "sh", path], user=user)
    return probe.returncode == 0


@contextlib.contextmanager
def interpreter_for(users: list[str]) -> Iterator[None]:
    """Let the users reach this interpreter and this checkout for the block (the engine's
    probes run them on the host): add o+x to directories on the way that lack it, and
    take it away again after."""
    changed: list[tuple[Path, int]] = []
    try:
        for target in (Path(sys.executable), Path(__file__)):
            if all(_can_run(u, str(target.parent)) for u in users):
                continue
            for parent in reversed(target.parents):
                mode = parent.stat().st_mode
                if not mode & stat.S_IXOTH:
                    os.chmod(parent, mode | stat.S_IXOTH)
                    changed.append((parent, mode))
        yield
    finally:
        for path, mode in reversed(changed):
            os.chmod(path, stat.S_IMODE(mode))


@contextlib.contextmanager
def run_shells_sshd() -> Iterator[ShellsSSHD]:
    require_sshd()
    need_root()
    users: dict[str, ShellUser] = {}
    for shell, path in SHELLS.items():
        if not os.path.exists(path):
            if os.environ.get("CI") == "true":
                pytest.fail(f"{path} is not installed and CI=true")
            continue  # the tests for this shell skip, naming it
        name = f"specsh{shell}"
        home = ensure_user(name, path)
        _write_owned(home, ".bashrc", _BASHRC, name)
        _write_owned(home, ".zshenv", _ZSHENV, name)
        _write_owned(home, ".config/fish/config.fish", _FISH_CONFIG, name)
        _write_owned(home, ".ssh/rc", _SSH_RC, name)
        users[shell] = ShellUser(name, path, home, f"{shell}host")
    # sshd reads authorized_keys as the user logging in: the directory must be readable.
    root = Path(tempfile.mkdtemp(prefix="specconsole-shells-sshd-"))
    os.chmod(root, 0o755)
    with interpreter_for([u.name for u in users.values()]), run_sshd(root) as server:
        os.chmod(server.client_key, 0o600)
        ssh_config = root / "shells_ssh_config"
        ssh_config.write_text(
            "".join(
                f"Host {u.alias}\n    HostName 127.0.0.1\n    Port {server.port}\n"
                f"    User {u.name}\n    IdentityFile {server.client_key}\n\n"
                for u in users.values()
            )
        )
        try:
            yield ShellsSSHD(server, users, ssh_config)
        finally:
            for user in users.values():  # what the tests wrote; the users stay, reused
                shutil.rmtree(Path(user.home, TEST_DIR), ignore_errors=True)
