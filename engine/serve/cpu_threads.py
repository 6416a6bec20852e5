"""The engine's CPU threading defaults, set before torch (and its OpenMP runtime) loads.

Measured on a 2-core host that also runs the console (request-to-request spread of step
time at code 256, 64 tokens, 16 requests a setting, other jobs running): torch's default
of one thread per core read 839-873 tok/s with 12-21% spread; one thread (cores - 1)
read 1211-1319 tok/s with 2-8% spread. Two OpenMP threads on two shared cores wait at
every barrier for whichever one the scheduler took away. Idle OpenMP threads also
spin-wait by default, so an idle engine steals cycles from a busy one beside it (side by
side comparisons run two): passive waiting makes the idle one cost nothing (interleaved
against alone: 0.96-1.01). An explicit OMP_NUM_THREADS / OMP_WAIT_POLICY in the
environment (a host profile's launch env) always wins.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping


def cpu_defaults(cores: int | None) -> dict[str, str]:
    """OMP_NUM_THREADS = cores - 1 (at least 1), OMP_WAIT_POLICY = PASSIVE."""
    return {"OMP_NUM_THREADS": str(max(1, (cores or 1) - 1)), "OMP_WAIT_POLICY": "PASSIVE"}


def apply_cpu_defaults(
    environ: MutableMapping[str, str] | None = None, cores: int | None = None
) -> dict[str, str]:
    """Set the defaults the environment does not set; returns the ones set."""
    env = os.environ if environ is None else environ
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    added = {k: v for k, v in cpu_defaults(cores).items() if k not in env}
    env.update(added)
    return added
