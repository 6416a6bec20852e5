"""Who listens on a service's port on its host, and whether it is our engine.

`/health` answering says that *something* serves the port, not that it is the engine we
launched: an engine started by hand, or one of ours that lost its pid file, answers just
as well. So the listener is looked up on the host itself: the listening socket's inode in
`/proc/net/tcp{,6}`, then the processes holding that inode among their descriptors
(`find /proc/*/fd -lname`, one process, no `ss` needed; another user's processes are not
visible to a non-root user, which reads as "a process this user cannot see").

A listener is
- ours when it is the pid the supervisor recorded or one of its descendants;
- an orphan of ours when it carries our service's marker in its environment
  (`SPECCONSOLE_SERVICE_DIR`, set by the process supervisor's wrapper) but is not under
  the recorded pid: an engine left behind by a start whose pid file was overwritten;
- foreign otherwise.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from console.transport.base import Transport, check

MARKER = "SPECCONSOLE_SERVICE_DIR"

_LISTENERS = r"""
port=$1; marker=$2
hex=$(printf '%04X' "$port")
# field 2 is local address:port in hex, 4 the state (0A: LISTEN), 10 the socket's inode
inodes=$(awk -v h="$hex" 'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); if (a[n] == h) \
  print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u)
[ -n "$inodes" ] || exit 0
for ino in $inodes; do
  pids=$(find /proc/[0-9]*/fd -maxdepth 1 -lname "socket:\[$ino\]" 2>/dev/null \
    | cut -d/ -f3 | sort -un)
  [ -n "$pids" ] || { echo "unseen $ino"; continue; }
  for pid in $pids; do
    chain=; p=$pid; n=0
    while [ -n "$p" ] && [ "$p" -gt 1 ] && [ $n -lt 64 ]; do
      p=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f2)
      chain="$chain,$p"; n=$((n+1))
    done
    mark=0
    tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qxF "$marker" && mark=1
    cmd=$(tr '\0\n' '  ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-300)
    printf 'pid %s %s %s %s\n' "$pid" "${chain#,}" "$mark" "$cmd"
  done
done
"""


@dataclass(frozen=True)
class Listener:
    pid: int | None  # None: the socket's owner is not visible to this user
    ancestors: tuple[int, ...] = ()
    marked: bool = False  # carries our service's marker
    cmdline: str = ""

    def describe(self) -> str:
        if self.pid is None:
            return "a process this user cannot see (another user's)"
        return f"pid {self.pid}: {self.cmdline or 'command line not readable'}"

    def under(self, pid: int | None) -> bool:
        return pid is not None and (self.pid == pid or pid in self.ancestors)


@dataclass(frozen=True)
class PortOwners:
    """The listeners on one port, sorted by whose they are for a recorded pid."""

    port: int
    listeners: tuple[Listener, ...]
    our_pid: int | None

    @property
    def ours(self) -> list[Listener]:
        return [item for item in self.listeners if item.under(self.our_pid)]

    @property
    def orphans(self) -> list[Listener]:
        return [i for i in self.listeners if i.marked and not i.under(self.our_pid)]

    @property
    def foreign(self) -> list[Listener]:
        return [i for i in self.listeners if not i.marked and not i.under(self.our_pid)]

    def foreign_text(self, host: str) -> str:
        """`port 8000 on gpu1 is held by another process (pid 4242: python -m ...)`"""
        who = "; ".join(item.describe() for item in self.foreign)
        return f"port {self.port} on {host} is held by another process ({who})"

    def orphan_text(self, host: str) -> str:
        who = "; ".join(item.describe() for item in self.orphans)
        return (
            f"an engine of ours that is not in the pid file holds port {self.port} on "
            f"{host} ({who})"
        )


def marker_value(service_dir: str) -> str:
    return f"{MARKER}={service_dir}"


async def port_owners(
    transport: Transport, port: int, service_dir: str, our_pid: int | None, *, timeout: float
) -> PortOwners:
    """The listeners on `port` on the host (none: the port is free)."""
    script = f"set -- {int(port)} {shlex.quote(marker_value(service_dir))}\n{_LISTENERS}"
    result = await check(transport, script, "Looking up who listens on the port", timeout=timeout)
    found: list[Listener] = []
    for line in result.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "unseen":
            found.append(Listener(None))
        elif word == "pid":
            found.append(_parse(rest))
    return PortOwners(port, tuple(found), our_pid)


def _parse(rest: str) -> Listener:
    pid, chain, mark, cmdline = ([*rest.split(" ", 3), "", "", ""])[:4]
    ancestors = tuple(int(p) for p in chain.split(",") if p.isdigit())
    return Listener(int(pid), ancestors, mark == "1", cmdline.strip())


async def end_orphans(transport: Transport, owners: PortOwners, *, timeout: float) -> None:
    """TERM the orphans of ours (their process groups where they lead one), then KILL
    whatever is left after `timeout`."""
    pids = " ".join(str(item.pid) for item in owners.orphans if item.pid is not None)
    if not pids:
        return
    ticks = max(1, int(timeout * 10))
    script = f"""
for p in {pids}; do kill -s TERM -- "-$p" 2>/dev/null || kill -s TERM "$p" 2>/dev/null; done
i=0
while [ $i -lt {ticks} ]; do
  left=
  for p in {pids}; do
    s=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
    [ -n "$s" ] && [ "$s" != Z ] && left=1
  done
  [ -n "$left" ] || exit 0
  sleep 0.1; i=$((i+1))
done
for p in {pids}; do kill -s KILL -- "-$p" 2>/dev/null || kill -s KILL "$p" 2>/dev/null; done
exit 0
"""
    await check(transport, script, "Ending an orphan engine", timeout=timeout + 30)
