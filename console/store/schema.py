"""The history database's tables and how an older file is brought up to date.

The schema version is SQLite's `PRAGMA user_version`. `MIGRATIONS[i]` takes a database at
version i to version i + 1; a new file runs them all, so a fresh database and a migrated
one are built by the same statements. A migration only adds (tables, columns, indexes):
rows stored by an older specconsole are never rewritten or dropped. To change the schema,
append a function; never edit one that has shipped.

Versions:
  1  runs and their request samples
  2  live samples; the writer's pid and start time, so a run whose writer died can be
     told from one still being written; indexes for the history's filters
  3  GPU samples taken during a run (utilisation, memory, power, clocks per GPU)
  4  each run's kind (baseline, sweep, breakeven, prompt, ...): a one-context baseline is
     a context sweep by method and must not be taken for the sweep a model is fitted from;
     older rows keep NULL and are read by their method and parameters
  5  noise profiles: each host's measured request-to-request spread and block-to-block
     shift across a restart, by flags (`specconsole calibrate`), so every comparison on
     that host carries its drift
  6  each run's sampling (temperature, top-p, top-k, seed policy) as JSON: acceptance
     depends on it, so runs at two settings must not be compared unawares; older rows
     keep NULL and read as greedy, as every run then was
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from console.store.errors import HistoryError


def _v1_runs_and_requests(db: sqlite3.Connection) -> None:
    # AUTOINCREMENT: a run id a user has written down never comes back as another run.
    db.execute(
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            host TEXT NOT NULL,
            engine TEXT NOT NULL,
            engine_version TEXT,
            method TEXT NOT NULL,
            params_json TEXT NOT NULL,
            flags_json TEXT NOT NULL,
            flags_hash TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('running', 'complete', 'incomplete', 'failed')),
            started_at REAL NOT NULL,
            finished_at REAL,
            summary_json TEXT
        )"""
    )
    # Key figures as columns for queries; `record_json` is the whole RequestSample.
    db.execute(
        """CREATE TABLE request_samples (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            t REAL NOT NULL,
            context_tokens INTEGER NOT NULL,
            text_type TEXT NOT NULL,
            decode_tok_s REAL,
            commit_len REAL,
            step_time_s REAL,
            ttft_s REAL,
            decode_source TEXT,
            streamed INTEGER NOT NULL,
            flagged TEXT,
            retried INTEGER NOT NULL,
            record_json TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX request_samples_run ON request_samples(run_id, id)")


def _v2_live_and_writer(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE live_samples (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            t REAL NOT NULL,
            source TEXT NOT NULL,
            tok_s REAL,
            commit_len REAL,
            step_time_s REAL,
            context_tokens INTEGER,
            record_json TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX live_samples_run_t ON live_samples(run_id, t)")
    db.execute("ALTER TABLE runs ADD COLUMN writer_pid INTEGER")
    db.execute("ALTER TABLE runs ADD COLUMN writer_start INTEGER")
    db.execute("CREATE INDEX runs_host_started ON runs(host, started_at)")
    db.execute("CREATE INDEX runs_status ON runs(status)")


def _v3_gpu_samples(db: sqlite3.Connection) -> None:
    # One row per GPU per sampling moment, beside the run's request and live samples.
    db.execute(
        """CREATE TABLE gpu_samples (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            t REAL NOT NULL,
            gpu_index INTEGER NOT NULL,
            utilization_pct REAL,
            memory_used_mib REAL,
            memory_total_mib REAL,
            power_w REAL,
            sm_clock_mhz REAL,
            mem_clock_mhz REAL
        )"""
    )
    db.execute("CREATE INDEX gpu_samples_run_t ON gpu_samples(run_id, t)")


def _v4_run_kind(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN kind TEXT")
    db.execute("CREATE INDEX runs_host_kind ON runs(host, kind, started_at)")


def _v5_noise_profiles(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE noise_profiles (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            host TEXT NOT NULL,
            engine TEXT NOT NULL,
            flags_hash TEXT NOT NULL,
            measured_at REAL NOT NULL,
            profile_json TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX noise_profiles_host ON noise_profiles(host, flags_hash, measured_at)")


def _v6_run_sampling(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE runs ADD COLUMN sampling_json TEXT")


Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: tuple[Migration, ...] = (
    _v1_runs_and_requests,
    _v2_live_and_writer,
    _v3_gpu_samples,
    _v4_run_kind,
    _v5_noise_profiles,
    _v6_run_sampling,
)
SCHEMA_VERSION = len(MIGRATIONS)


def user_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: sqlite3.Connection, where: str) -> None:
    """Bring `db` (opened in autocommit mode) to SCHEMA_VERSION, one transaction per step.

    BEGIN IMMEDIATE takes the write lock before the version is read, so two processes
    opening a new or old file at once cannot both apply the same step.
    """
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            version = user_version(db)
            if version > SCHEMA_VERSION:
                raise HistoryError(
                    f"The run history at {where} has schema version {version}, newer than "
                    f"this specconsole knows ({SCHEMA_VERSION}); upgrade specconsole to read it."
                )
            if version == SCHEMA_VERSION:
                db.execute("COMMIT")
                return
            MIGRATIONS[version](db)
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
