"""The engine's CPU threading defaults, set before torch (and its OpenMP runtime) loads.

Measured on a 2-core host that also runs the console, with other jobs running (spread:
request-to-request relative SD of step time at code 256, 64 tokens, 16 requests a
setting; several cycles each):
- threads: torch's default of one thread per core read 325-873 tok/s with 12-66% spread;
  one thread (cores - 1) read 497-1319 tok/s with 2-39%, faster in every cycle. Two
  OpenMP threads on two shared cores wait at every barrier for whichever one the
  scheduler took away.
- waiting: idle OpenMP threads spin by default, so an idle engine steals cycles from a
  busy one beside it (side by side comparisons run two); passive waiting makes the idle
  one cost nothing (interleaved against alone: 0.96-1.01).
- pinning: the engine on the last cores (the console keeps the first) had less spread in
  11 of 11 cycles (e.g. 12-35% against 17-50%), at about the same speed.
The console at a lower priority (nice 10) changed neither figure beyond the cycles' own
spread, so it is not done. An explicit OMP_NUM_THREADS / OMP_WAIT_POLICY in the
environment (a host profile's launch env) always wins; SPECENGINE_CPU_PIN=0 turns the
pinning off.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping


def cpu_defaults(cores: int | None) -> dict[str, str]:
    """OMP_NUM_THREADS = cores - 1 (at least 1), OMP_WAIT_POLICY = PASSIVE."""
    return {"OMP_NUM_THREADS": str(max(1, (cores or 1) - 1)), "OMP_WAIT_POLICY": "PASSIVE"}


def pin_to_last_cores(threads: int, allowed: set[int] | None = None) -> set[int] | None:
    """Pin this process (and the threads it starts afterwards) to the last `threads` of
    its allowed cores, leaving the first ones to the console; None when there is no
    core to leave (or no affinity on this platform), or SPECENGINE_CPU_PIN=0."""
    if os.environ.get("SPECENGINE_CPU_PIN") == "0" or not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(allowed if allowed is not None else os.sched_getaffinity(0))
    if len(cores) <= threads:
        return None
    chosen = set(cores[-threads:])
    os.sched_setaffinity(0, chosen)
    return chosen


def apply_cpu_defaults(
    environ: MutableMapping[str, str] | None = None, cores: int | None = None
) -> dict[str, str]:
    """Set the defaults the environment does not set; returns the ones set."""
    env = os.environ if environ is None else environ
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    added = {k: v for k, v in cpu_defaults(cores).items() if k not in env}
    env.update(added)
    if env is os.environ:
        threads = env["OMP_NUM_THREADS"]
        pin_to_last_cores(int(threads) if threads.isdigit() else 1)
    return added
