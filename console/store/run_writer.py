"""Who is writing a run, and whether that process is still there.

A run stays `running` in the store until its writer calls `finish_run`. A writer that
crashed, was killed or lost its terminal never does, so the next process to open the
store asks whether the writer is alive. A pid alone is not enough: pids are reused, and a
run left by a crash last week must not look alive because its pid now belongs to some
other process. Where the kernel says when a process started (Linux `/proc`), that start
time is stored with the pid and must match too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunWriter:
    pid: int
    start: int | None  # process start time in clock ticks since boot; None where unknown

    @classmethod
    def current(cls) -> RunWriter:
        pid = os.getpid()
        return cls(pid, _proc_stat(pid)[1])


def _proc_stat(pid: int) -> tuple[str | None, int | None]:
    """(state, start ticks) from /proc/<pid>/stat, or (None, None) off Linux or if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None, None
    # The command name (field 2) is in parentheses and may itself hold spaces or ')'.
    rest = text[text.rfind(")") + 2 :].split()
    try:
        return rest[0], int(rest[19])
    except (IndexError, ValueError):
        return None, None


def is_alive(pid: int | None, start: int | None) -> bool:
    """Whether the process that wrote a run (pid, start ticks as stored) still runs."""
    if pid is None or pid <= 0:
        return False  # written before writers were recorded: no process can be shown alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    state, now_start = _proc_stat(pid)
    if state in ("Z", "X"):
        return False  # exited, not yet reaped by its parent
    return start is None or now_start is None or now_start == start
