"""A real sshd on loopback that a test can kill and start again on the same port.

`sshd.run_sshd` serves the whole session and must never go away mid-run; the link-drop
tests need their own server. Killing only the listening sshd is not a link drop: every
connection has its own forked sshd (in its own session, so a process-group kill misses it)
and those keep serving. `stop()` therefore SIGKILLs the listener and every sshd process
below it, as an sshd crash or a host reboot would look to the client: the TCP connections
die, the commands they ran lose their pipes. Processes those sessions started with setsid
(the engine) are no descendants of sshd any more and live on, as on a real host.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.console.sshd import SSHD, SSHServer, _wait_listening, run_sshd


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
        ppid = int(stat.rpartition(")")[2].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _alive_sshd(pid: int) -> bool:
    # A killed child of a killed parent may stay a zombie if nothing reaps it: that is gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z" and _comm(pid).startswith("sshd")


def sshd_descendants(pid: int) -> list[int]:
    """The sshd processes below `pid` (per-connection and privilege-separated ones)."""
    tree = _children()
    found: list[int] = []
    todo = list(tree.get(pid, []))
    while todo:
        child = todo.pop()
        if _comm(child).startswith("sshd"):
            found.append(child)
        todo.extend(tree.get(child, []))
    return found


class RestartableSSHD:
    """One sshd config and port; `stop()` kills every sshd of it, `start()` serves again."""

    def __init__(self, server: SSHServer) -> None:
        self.server = server
        self.proc: subprocess.Popen | None = None

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.running:
            return
        config = self.server.root / "sshd_config"
        with self.server.log.open("ab") as log_fh:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(config)], stdout=log_fh, stderr=subprocess.STDOUT
            )
        # The old listener's socket is gone with its process; sshd sets SO_REUSEADDR, so
        # the same port is free at once (a few retries cover a slow exit).
        _wait_listening(self.port, self.proc)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        victims = [*sshd_descendants(proc.pid), proc.pid]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive_sshd(pid) for pid in victims[:-1]):
            if time.monotonic() > deadline:
                raise RuntimeError("sshd connection processes did not exit")
            time.sleep(0.05)


@contextlib.contextmanager
def run_restartable_sshd(root: Path) -> Iterator[RestartableSSHD]:
    """Like `run_sshd` (same keys, config and client files), with stop/start."""
    with run_sshd(root) as server:
        # Replace the fixture's process with one this object owns; run_sshd's own cleanup
        # then finds its process already gone.
        server.proc.terminate()
        server.proc.wait(10)
        sshd = RestartableSSHD(server)
        sshd.start()
        try:
            yield sshd
        finally:
            sshd.stop()
