"""Schema versions: a history written by the first version opens without losing a row, a
newer one is refused, and a migrated file ends with the same schema as a new one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from console.store import HistoryError, RunStore, default_history_path
from console.store.schema import SCHEMA_VERSION
from tests.console.factories import live_sample, request_sample, run_info

# The version-1 schema as it shipped; kept here verbatim so a later edit of the shipped
# migration (instead of a new one) shows up as a difference from a fresh file.
V1_DDL = """
CREATE TABLE runs (
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
        );
CREATE TABLE request_samples (
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
        );
CREATE INDEX request_samples_run ON request_samples(run_id, id);
PRAGMA user_version = 1;
"""


def write_v1(path: Path) -> list[int]:
    """A version-1 file with a finished run of 3 samples and one left running; their ids."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript(V1_DDL)
    ids = []
    for status, finished, summary in (("complete", 1_700_000_900.0, '{"verdict": "ok"}'),
                                      ("running", None, None)):  # fmt: skip
        info = run_info()
        cur = db.execute(
            """INSERT INTO runs (host, engine, engine_version, method, params_json, flags_json,
                flags_hash, status, started_at, finished_at, summary_json)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (info.host, info.engine, info.engine_version, info.method,
             '{"contexts": [1024, 4096], "repeats": 3, "text": "code"}',
             '{"draft-window": 8, "tree-budget": 64, "chat-template": null}',
             info.flags_hash, status, info.started_at, finished, summary),
        )  # fmt: skip
        ids.append(cur.lastrowid)
    for i in range(3):
        s = request_sample(i)
        db.execute(
            """INSERT INTO request_samples (run_id, t, context_tokens, text_type, decode_tok_s,
                commit_len, step_time_s, ttft_s, decode_source, streamed, flagged, retried,
                record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (ids[0], s.t, s.context_tokens, s.text_type, s.decode_tok_s, s.commit_len,
             s.step_time_s, s.ttft_s, s.decode_source, int(s.streamed), s.flagged,
             int(s.retried), json.dumps(s.as_dict())),
        )  # fmt: skip
    db.commit()
    db.close()
    return ids


def schema_of(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"
        ).fetchall()
    # ALTER TABLE ADD COLUMN appends to the stored CREATE text; compare it token by token.
    return [
        (name, " ".join(sql.replace("(", " ( ").replace(",", " , ").split())) for name, sql in rows
    ]


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA user_version").fetchone()[0]


async def test_a_version_1_history_migrates_without_losing_rows() -> None:
    path = default_history_path()
    finished_id, running_id = write_v1(path)
    store = RunStore()
    try:
        runs = await store.runs()
        assert sorted(r.id for r in runs) == [finished_id, running_id]
        finished = await store.run(finished_id)
        assert finished.info == run_info() and finished.status == "complete"
        assert finished.summary == {"verdict": "ok"} and finished.finished_at == 1_700_000_900.0
        assert finished.requests == tuple(request_sample(i) for i in range(3))
        # A version-1 run has no recorded writer, so nothing can show it is still going.
        left = await store.run(running_id)
        assert left.status == "incomplete" and left.writer_pid is None
        # The migrated file takes what version 2 added: live samples, writers.
        await store.add_live(finished_id, live_sample())
        assert (await store.run(finished_id)).live == (live_sample(),)
        new_id = await store.start_run(run_info())
        assert new_id > running_id and (await store.run(new_id)).status == "running"
    finally:
        store.close()
    assert user_version(path) == SCHEMA_VERSION


async def test_a_migrated_file_has_the_schema_of_a_new_one(tmp_path: Path) -> None:
    old, new = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    write_v1(old)
    for path in (old, new):
        store = RunStore(path)
        try:
            await store.runs()
        finally:
            store.close()
    assert schema_of(old) == schema_of(new)
    assert user_version(old) == user_version(new) == SCHEMA_VERSION


async def test_a_history_from_a_newer_specconsole_is_refused_untouched() -> None:
    path = default_history_path()
    write_v1(path)
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    store = RunStore()
    with pytest.raises(HistoryError, match=r"newer than this specconsole knows .*upgrade"):
        await store.runs()
    store.close()
    assert user_version(path) == SCHEMA_VERSION + 1
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM request_samples").fetchone()[0] == 3
