"""The run store: every measurement run and each of its samples, in one SQLite file.

A sweep can take an hour and be cut short by Ctrl-C, a dropped ssh link or a crash, and a
`watch` can run for days beside it. So each sample is committed the moment it is added
(WAL mode: a commit is cheap and readers never block the writer), and a run whose writer
died is not lost but marked `incomplete`, with every sample it took, the next time any
process opens the store. Two processes may write the same file at once; SQLite's locking
and a generous busy timeout serialize them.

`sqlite3` blocks, so every call runs in a worker thread (`asyncio.to_thread`) on one
connection that a lock guards: the event loop never waits on the disk, and the connection
is never used by two threads at once. The connection opens on first use, which is also
when the schema is migrated and abandoned runs are marked.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, get_args

from console.analysis.gpu_sample import GpuSample
from console.analysis.noise_profile import NoiseProfile
from console.analysis.records import LiveSample, RequestSample, RunInfo, RunStatus
from console.store import gpu_samples, noise_profiles, schema
from console.store.errors import HistoryError
from console.store.paths import default_history_path
from console.store.run_writer import RunWriter, is_alive

BUSY_TIMEOUT_S = 15.0  # a sweep and a watch commit in milliseconds; this only absorbs bursts
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
FINAL_STATUSES = tuple(s for s in RUN_STATUSES if s != "running")

T = TypeVar("T")


@dataclass(frozen=True)
class StoredRun:
    """A run as stored. `RunStore.runs()` leaves `requests` and `live` empty and gives only
    the counts (`samples_loaded` is False); `run()` and `latest()` load the samples."""

    id: int
    info: RunInfo
    status: RunStatus
    finished_at: float | None
    summary: dict[str, Any] | None
    requests: tuple[RequestSample, ...] = ()
    live: tuple[LiveSample, ...] = ()
    gpu: tuple[GpuSample, ...] = ()  # per GPU per moment, where the host reported GPUs
    request_count: int = 0
    live_count: int = 0
    writer_pid: int | None = None
    samples_loaded: bool = False

    @property
    def sample_count(self) -> int:
        return self.request_count + self.live_count

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            **self.info.as_dict(),
            "status": self.status,
            "finished_at": self.finished_at,
            "summary": self.summary,
            "writer_pid": self.writer_pid,
            "request_count": self.request_count,
            "live_count": self.live_count,
        }
        if self.samples_loaded:
            data["requests"] = [s.as_dict() for s in self.requests]
            data["live"] = [s.as_dict() for s in self.live]
            if self.gpu:
                data["gpu"] = [s.as_dict() for s in self.gpu]
        return data


def _dumps(value: Any) -> str:
    # default=str: a flag value that JSON cannot hold (a Path, say) is kept as its text,
    # the same way `flags_hash` reads it.
    return json.dumps(value, default=str)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class RunStore:
    """Runs and samples in SQLite; the async API the measurement core, CLI and TUI share."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_history_path()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    @classmethod
    def default(cls) -> RunStore:
        return cls(default_history_path())

    # -- writing ------------------------------------------------------------------------

    async def start_run(self, info: RunInfo) -> int:
        """Store a new run as `running`, owned by this process; returns its id."""
        writer = RunWriter.current()

        def insert(db: sqlite3.Connection) -> int:
            cur = db.execute(
                """INSERT INTO runs (host, engine, engine_version, method, params_json,
                    flags_json, flags_hash, status, started_at, writer_pid, writer_start, kind,
                    sampling_json)
                VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)""",
                (
                    info.host,
                    info.engine,
                    info.engine_version,
                    info.method,
                    _dumps(info.params),
                    _dumps(info.flags),
                    info.flags_hash,
                    info.started_at,
                    writer.pid,
                    writer.start,
                    info.kind,
                    _dumps(info.sampling) if info.sampling else None,
                ),
            )
            if cur.lastrowid is None:
                raise RuntimeError("SQLite gave no id for a new run")
            return cur.lastrowid

        return await self._call(insert)

    async def add_request(self, run_id: int, sample: RequestSample) -> None:
        """Store one request sample, committed before this returns."""
        row = (
            run_id,
            sample.t,
            sample.context_tokens,
            sample.text_type,
            sample.decode_tok_s,
            sample.commit_len,
            sample.step_time_s,
            sample.ttft_s,
            sample.decode_source,
            int(sample.streamed),
            sample.flagged,
            int(sample.retried),
            _dumps(sample.as_dict()),
        )
        sql = """INSERT INTO request_samples (run_id, t, context_tokens, text_type,
            decode_tok_s, commit_len, step_time_s, ttft_s, decode_source, streamed, flagged,
            retried, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
        await self._call(lambda db: self._insert_sample(db, run_id, sql, row))

    async def add_live(self, run_id: int, sample: LiveSample) -> None:
        """Store one live-series sample, committed before this returns."""
        row = (
            run_id,
            sample.t,
            sample.source,
            sample.tok_s,
            sample.commit_len,
            sample.step_time_s,
            sample.context_tokens,
            _dumps(sample.as_dict()),
        )
        sql = """INSERT INTO live_samples (run_id, t, source, tok_s, commit_len, step_time_s,
            context_tokens, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""
        await self._call(lambda db: self._insert_sample(db, run_id, sql, row))

    @staticmethod
    def _insert_sample(db: sqlite3.Connection, run_id: int, sql: str, row: tuple) -> None:
        try:
            db.execute(sql, row)  # autocommit: this statement is its own transaction
        except sqlite3.IntegrityError as exc:  # the foreign key: no such run
            raise _unknown_run(run_id) from exc

    async def add_gpu(self, run_id: int, samples: list[GpuSample]) -> None:
        """Store one moment's GPU samples (all GPUs of the host), committed together."""
        await self._call(lambda db: gpu_samples.insert(db, run_id, samples))

    async def finish_run(
        self, run_id: int, status: RunStatus, summary: dict[str, Any] | None = None
    ) -> None:
        """Mark a run complete, incomplete or failed; a given summary replaces the stored
        one, None keeps it."""
        if status not in FINAL_STATUSES:
            raise ValueError(f"finish_run needs one of {FINAL_STATUSES}, not {status!r}")
        summary_json = None if summary is None else _dumps(summary)

        def update(db: sqlite3.Connection) -> None:
            cur = db.execute(
                """UPDATE runs SET status = ?, finished_at = ?,
                    summary_json = COALESCE(?, summary_json) WHERE id = ?""",
                (status, time.time(), summary_json, run_id),
            )
            if cur.rowcount == 0:
                raise _unknown_run(run_id)

        await self._call(update)

    # -- reading ------------------------------------------------------------------------

    async def runs(
        self,
        *,
        host: str | None = None,
        method: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 50,
    ) -> list[StoredRun]:
        """Runs matching every filter given, newest first, with counts but no samples."""
        if status is not None and status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, not {status!r}")
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        where, args = [], []
        for column, value in (("host", host), ("method", method), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = _SELECT_RUNS + (f" WHERE {' AND '.join(where)}" if where else "")
        sql += " ORDER BY started_at DESC, id DESC"
        if kind is None:
            sql += " LIMIT ?"

        def select(db: sqlite3.Connection) -> list[StoredRun]:
            rows = db.execute(sql, (*args, limit) if kind is None else args)
            runs = (_run_from_row(row) for row in rows)
            # filtered here: rows stored before schema 4 have their kind inferred in Python
            return [r for r in runs if kind is None or r.info.kind == kind][:limit]

        return await self._call(select)

    async def run(self, run_id: int) -> StoredRun:
        """One run with all its samples; HistoryError if there is no such run."""

        def select(db: sqlite3.Connection) -> StoredRun:
            with _snapshot(db):
                row = db.execute(_SELECT_RUNS + " WHERE id = ?", (run_id,)).fetchone()
                if row is None:
                    raise _unknown_run(run_id)
                return _with_samples(db, _run_from_row(row))

        return await self._call(select)

    async def latest(
        self,
        host: str,
        method: str | tuple[str, ...],
        *,
        flags_hash: str | None = None,
        complete_only: bool = True,
    ) -> StoredRun | None:
        """The newest run of `host` by one of the methods (with these flags, and complete,
        unless told otherwise), samples loaded; None if there is none."""
        methods = (method,) if isinstance(method, str) else tuple(method)
        if not methods:
            return None
        where = [f"host = ? AND method IN ({', '.join('?' * len(methods))})"]
        args: list[Any] = [host, *methods]
        if flags_hash is not None:
            where.append("flags_hash = ?")
            args.append(flags_hash)
        if complete_only:
            where.append("status = 'complete'")
        return await self._newest(where, args)

    async def latest_sweep(
        self,
        host: str,
        *,
        flags_hash: str | None = None,
        min_contexts: int = 2,
        text_types: tuple[str, ...] | list[str] = (),
    ) -> StoredRun | None:
        """The newest complete context sweep of `host` (with these flags) over at least
        `min_contexts` prompt lengths, samples loaded: the run a verdict's model is fitted
        from. Baselines never qualify (labelled, or one context when stored unlabelled)."""
        where = ["host = ?", "method = 'context-sweep'", "status = 'complete'",
                 "COALESCE(kind, 'sweep') = 'sweep'",
                 "(SELECT count(DISTINCT context_tokens) FROM request_samples "
                 "WHERE run_id = runs.id AND flagged IS NULL) >= ?"]  # fmt: skip
        args: list[Any] = [host, min_contexts]
        if flags_hash is not None:
            where.append("flags_hash = ?")
            args.append(flags_hash)
        for kind in text_types:  # every text type the verdict needs, measured unflagged
            where.append("EXISTS (SELECT 1 FROM request_samples WHERE run_id = runs.id "
                         "AND text_type = ? AND flagged IS NULL)")  # fmt: skip
            args.append(kind)
        return await self._newest(where, args)

    async def _newest(self, where: list[str], args: list[Any]) -> StoredRun | None:
        """The newest run matching every condition in `where`, samples loaded."""
        sql = f"{_SELECT_RUNS} WHERE {' AND '.join(where)} ORDER BY started_at DESC, id DESC"

        def select(db: sqlite3.Connection) -> StoredRun | None:
            with _snapshot(db):
                row = db.execute(sql + " LIMIT 1", args).fetchone()
                return None if row is None else _with_samples(db, _run_from_row(row))

        return await self._call(select)

    async def live_since(self, host: str, since: float) -> list[LiveSample]:
        """Every live sample of `host` taken at or after `since` (unix time), oldest first,
        across runs: what a dashboard reopened after a restart charts again."""

        def select(db: sqlite3.Connection) -> list[LiveSample]:
            rows = db.execute(
                """SELECT l.record_json FROM live_samples AS l JOIN runs AS r ON r.id = l.run_id
                WHERE r.host = ? AND l.t >= ? ORDER BY l.t, l.id""",
                (host, since),
            )
            return [LiveSample.from_dict(json.loads(r[0])) for r in rows]

        return await self._call(select)

    async def add_noise_profile(self, profile: NoiseProfile) -> int:
        """Store a host's measured noise (`specconsole calibrate`)."""
        return await self._call(lambda db: noise_profiles.insert(db, profile))

    async def noise_profile(self, host: str, flags_hash: str | None = None) -> NoiseProfile | None:
        """The newest noise profile of `host` with these flags (any flags when None)."""
        return await self._call(lambda db: noise_profiles.latest(db, host, flags_hash))

    def close(self) -> None:
        """Close the connection; a later call opens it again."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- the connection -----------------------------------------------------------------

    async def _call(self, body: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.to_thread(self._locked, body)

    def _locked(self, body: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                if self._db is None:
                    self._db = self._open()
                return body(self._db)
            except sqlite3.OperationalError as exc:
                raise self._unusable(exc) from exc
            except sqlite3.DatabaseError as exc:
                if type(exc) is not sqlite3.DatabaseError:  # a bug in a statement, not the file
                    raise
                raise self._unusable(exc) from exc

    def _unusable(self, exc: Exception) -> HistoryError:
        if "locked" in str(exc):
            return HistoryError(
                f"The run history at {self.path} stayed locked by another process for "
                f"{BUSY_TIMEOUT_S:.0f} s; try again when its write is done."
            )
        return HistoryError(
            f"The run history at {self.path} could not be read or written ({exc}); "
            "check that file and its directory."
        )

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(
                f"Cannot create the run history's directory {self.path.parent} "
                f"({exc.strerror or exc}); set SPECCONSOLE_DATA_DIR to a writable one."
            ) from exc
        # timeout: SQLite's busy timeout. isolation_level=None: autocommit, so each insert
        # is committed by itself and the few multi-statement steps say BEGIN / COMMIT.
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA foreign_keys = ON")
            schema.migrate(db, str(self.path))
            _mark_abandoned(db)
        except BaseException:
            db.close()
            raise
        return db


_SELECT_RUNS = """SELECT runs.*,
    (SELECT count(*) FROM request_samples WHERE run_id = runs.id) AS request_count,
    (SELECT count(*) FROM live_samples WHERE run_id = runs.id) AS live_count
    FROM runs"""


def _unknown_run(run_id: int) -> HistoryError:
    return HistoryError(
        f"There is no run {run_id} in the history; `specconsole history list` shows the runs."
    )


@contextmanager
def _snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """A read transaction, so a run's row and its samples come from one moment even while
    another process is adding samples."""
    db.execute("BEGIN")
    try:
        yield
    finally:
        if db.in_transaction:
            db.execute("COMMIT")


def _mark_abandoned(db: sqlite3.Connection) -> None:
    """Mark `incomplete` each running run whose writer is gone; its finish time is its
    last sample's (its start if it took none), the last moment it is known to have run."""
    rows = db.execute(
        "SELECT id, writer_pid, writer_start FROM runs WHERE status = 'running'"
    ).fetchall()
    dead = [row["id"] for row in rows if not is_alive(row["writer_pid"], row["writer_start"])]
    if not dead:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for run_id in dead:
            db.execute(
                """UPDATE runs SET status = 'incomplete', finished_at = COALESCE(
                    (SELECT max(t) FROM (
                        SELECT max(t) AS t FROM request_samples WHERE run_id = :id
                        UNION ALL SELECT max(t) FROM live_samples WHERE run_id = :id)),
                    started_at)
                WHERE id = :id AND status = 'running'""",
                {"id": run_id},
            )
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _run_from_row(row: sqlite3.Row) -> StoredRun:
    info = RunInfo(
        host=row["host"],
        engine=row["engine"],
        method=row["method"],
        params=_loads(row["params_json"]),
        flags=_loads(row["flags_json"]),
        engine_version=row["engine_version"],
        flags_hash=row["flags_hash"],
        started_at=row["started_at"],
        kind=row["kind"] or "",  # NULL before schema 4: RunInfo infers it
        sampling=_loads(row["sampling_json"]) or {},  # NULL: greedy (before schema 6)
    )
    return StoredRun(
        id=row["id"],
        info=info,
        status=row["status"],
        finished_at=row["finished_at"],
        summary=_loads(row["summary_json"]),
        request_count=row["request_count"],
        live_count=row["live_count"],
        writer_pid=row["writer_pid"],
    )


def _with_samples(db: sqlite3.Connection, run: StoredRun) -> StoredRun:
    requests = tuple(
        RequestSample.from_dict(json.loads(r[0]))
        for r in db.execute(
            "SELECT record_json FROM request_samples WHERE run_id = ? ORDER BY id", (run.id,)
        )
    )
    live = tuple(
        LiveSample.from_dict(json.loads(r[0]))
        for r in db.execute(
            "SELECT record_json FROM live_samples WHERE run_id = ? ORDER BY id", (run.id,)
        )
    )
    return replace(
        run,
        requests=requests,
        live=live,
        gpu=gpu_samples.select(db, run.id),
        request_count=len(requests),
        live_count=len(live),
        samples_loaded=True,
    )
