"""Noise profiles in the history database (table `noise_profiles`, schema version 5).

One row per calibration: the host, the engine, the flags' hash and the whole profile as
JSON (`analysis.noise_profile.NoiseProfile`). The newest row for a host and flags is the
one every comparison on that host uses. Plain functions on an open connection, called by
`RunStore` inside its lock.
"""

from __future__ import annotations

import json
import sqlite3

from console.analysis.noise_profile import NoiseProfile


def insert(db: sqlite3.Connection, profile: NoiseProfile) -> int:
    cursor = db.execute(
        "INSERT INTO noise_profiles (host, engine, flags_hash, measured_at, profile_json) "
        "VALUES (?, ?, ?, ?, ?)",
        (profile.host, profile.engine, profile.flags_hash, profile.measured_at,
         json.dumps(profile.as_dict())),
    )  # fmt: skip
    return int(cursor.lastrowid or 0)


def latest(db: sqlite3.Connection, host: str, flags_hash: str | None) -> NoiseProfile | None:
    """The newest profile of `host` with these flags (any flags when None)."""
    sql = "SELECT profile_json FROM noise_profiles WHERE host = ?"
    args: tuple = (host,)
    if flags_hash is not None:
        sql += " AND flags_hash = ?"
        args += (flags_hash,)
    row = db.execute(sql + " ORDER BY measured_at DESC, id DESC LIMIT 1", args).fetchone()
    return NoiseProfile.from_dict(json.loads(row[0])) if row else None
