"""GPU samples of a run in the history database (table `gpu_samples`, schema version 3).

Plain functions on an open connection, called by `RunStore` inside its lock, so the GPU
rows follow the same rules as the other samples: committed as added, read in the same
snapshot as their run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from console.analysis.gpu_sample import GpuSample

_COLUMNS = (
    "t",
    "gpu_index",
    "utilization_pct",
    "memory_used_mib",
    "memory_total_mib",
    "power_w",
    "sm_clock_mhz",
    "mem_clock_mhz",
)


def insert(db: sqlite3.Connection, run_id: int, samples: Iterable[GpuSample]) -> None:
    rows = [
        (
            run_id,
            s.t,
            s.index,
            s.utilization_pct,
            s.memory_used_mib,
            s.memory_total_mib,
            s.power_w,
            s.sm_clock_mhz,
            s.mem_clock_mhz,
        )
        for s in samples
    ]
    if not rows:
        return
    marks = ", ".join("?" * (len(_COLUMNS) + 1))
    sql = f"INSERT INTO gpu_samples (run_id, {', '.join(_COLUMNS)}) VALUES ({marks})"
    db.execute("BEGIN IMMEDIATE")  # one moment's GPUs land together or not at all
    try:
        db.executemany(sql, rows)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def select(db: sqlite3.Connection, run_id: int) -> tuple[GpuSample, ...]:
    rows = db.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM gpu_samples WHERE run_id = ? ORDER BY t, gpu_index",
        (run_id,),
    )
    return tuple(
        GpuSample(
            index=r["gpu_index"],
            utilization_pct=r["utilization_pct"],
            memory_used_mib=r["memory_used_mib"],
            memory_total_mib=r["memory_total_mib"],
            power_w=r["power_w"],
            sm_clock_mhz=r["sm_clock_mhz"],
            mem_clock_mhz=r["mem_clock_mhz"],
            t=r["t"],
        )
        for r in rows
    )
