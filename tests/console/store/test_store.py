"""The run store on real SQLite files: every field round-trips, a killed writer's samples
survive and its run is marked incomplete, a live writer's run is left alone, two processes
write one file at once."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.errors import ConsoleError
from console.sampling import Sampling
from console.store import HistoryError, RunStore, default_history_path
from console.store import runs as runs_module
from tests.console.factories import live_sample, request_sample, run_info

REPO = Path(__file__).resolve().parents[3]


def db_rows(path: Path, sql: str, *args: Any) -> list[sqlite3.Row]:
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        return db.execute(sql, args).fetchall()


# -- round trip ---------------------------------------------------------------------------


def test_the_default_path_is_under_the_data_dir(_isolated_data: Path) -> None:
    assert default_history_path() == _isolated_data / "history.sqlite"
    assert RunStore().path == RunStore.default().path == _isolated_data / "history.sqlite"


async def test_every_field_round_trips(_isolated_data: Path) -> None:
    # sampled, seeded, under load (the factory's samples are greedy and alone, as most
    # tests want)
    sample = request_sample(
        3, flagged="latency outlier", temperature=1.0, seed=12345, concurrency=4, wave=2
    )
    live = live_sample(2)
    # A new record field must be given a non-default value above, so this covers it.
    for record in (sample, live):
        unset = [
            f.name
            for f in dataclasses.fields(record)
            if f.name != "flagged" and getattr(record, f.name) == f.default
        ]
        assert unset == [], f"give these fields a non-default value in the factory: {unset}"
    info = run_info(sampling=Sampling(temperature=1.0, top_p=0.9, seed=7).as_dict())
    store = RunStore()
    try:
        run_id = await store.start_run(info)
        await store.add_request(run_id, sample)
        await store.add_live(run_id, live)
        await store.finish_run(run_id, "complete", {"verdict": "step time", "fit": [1.5, 0.2]})
        stored = await store.run(run_id)
    finally:
        store.close()
    assert stored.id == run_id and stored.info == info
    assert stored.status == "complete" and stored.finished_at is not None
    assert stored.summary == {"verdict": "step time", "fit": [1.5, 0.2]}
    assert stored.requests == (sample,) and stored.live == (live,)
    assert stored.writer_pid == os.getpid() and stored.sample_count == 2
    # The key figures are real columns too, for queries.
    (row,) = db_rows(store.path, "SELECT * FROM request_samples")
    for name in ("context_tokens", "text_type", "decode_tok_s", "commit_len", "step_time_s"):
        assert row[name] == getattr(sample, name), name
    for name in ("ttft_s", "decode_source", "streamed", "flagged", "retried", "t"):
        assert row[name] == getattr(sample, name), name
    (row,) = db_rows(store.path, "SELECT * FROM live_samples")
    assert (row["t"], row["source"], row["tok_s"], row["context_tokens"]) == (
        live.t,
        live.source,
        live.tok_s,
        live.context_tokens,
    )
    (row,) = db_rows(store.path, "SELECT * FROM runs")
    assert json.loads(row["flags_json"]) == info.flags and row["flags_hash"] == info.flags_hash
    assert json.loads(row["sampling_json"])["temperature"] == 1.0
    assert stored.info.sampling_settings.label == "T=1 top-p 0.9 seed 7"
    assert db_rows(store.path, "PRAGMA journal_mode")[0][0] == "wal"


async def test_filters_order_and_latest() -> None:
    store = RunStore()
    try:
        ids = {}
        for name, host, method, started, status in (
            ("old-sweep", "gpu1", "context-sweep", 100.0, "complete"),
            ("probe", "gpu1", "probe", 200.0, "complete"),
            ("new-sweep", "gpu1", "context-sweep", 300.0, "failed"),
            ("other-host", "gpu2", "context-sweep", 400.0, "complete"),
        ):
            flags = {"draft-window": 16} if name == "old-sweep" else {"draft-window": 8}
            run_id = await store.start_run(run_info(host, method, started_at=started, flags=flags))
            await store.add_request(run_id, request_sample(int(started)))
            await store.finish_run(run_id, status)  # type: ignore[arg-type]
            ids[name] = run_id
        listed = await store.runs()
        assert [r.id for r in listed] == [
            ids[n] for n in ("other-host", "new-sweep", "probe", "old-sweep")
        ]
        assert not listed[0].samples_loaded and listed[0].request_count == 1
        assert [r.id for r in await store.runs(host="gpu1", method="context-sweep")] == [
            ids["new-sweep"],
            ids["old-sweep"],
        ]
        assert [r.id for r in await store.runs(status="failed")] == [ids["new-sweep"]]
        assert [r.id for r in await store.runs(limit=2)] == [ids["other-host"], ids["new-sweep"]]

        latest = await store.latest("gpu1", "context-sweep")
        assert latest is not None and latest.id == ids["old-sweep"]  # the newer one failed
        assert latest.samples_loaded and len(latest.requests) == 1
        latest = await store.latest("gpu1", "context-sweep", complete_only=False)
        assert latest is not None and latest.id == ids["new-sweep"]
        latest = await store.latest("gpu1", ("probe", "context-sweep"))
        assert latest is not None and latest.id == ids["probe"]
        hash8 = run_info(flags={"draft-window": 8}).flags_hash
        assert await store.latest("gpu1", "context-sweep", flags_hash=hash8) is None
        latest = await store.latest("gpu1", "context-sweep", flags_hash=hash8, complete_only=False)
        assert latest is not None and latest.id == ids["new-sweep"]
        assert await store.latest("gpu3", "context-sweep") is None
    finally:
        store.close()


async def test_live_since_spans_runs_of_one_host() -> None:
    store = RunStore()
    try:
        first = await store.start_run(run_info("gpu1", "watch"))
        second = await store.start_run(run_info("gpu1", "watch"))
        other = await store.start_run(run_info("gpu2", "watch"))
        for i in range(3):
            await store.add_live(first, live_sample(i))
            await store.add_live(second, live_sample(10 + i))
            await store.add_live(other, live_sample(20 + i))
        got = await store.live_since("gpu1", live_sample(1).t)
        assert got == [live_sample(i) for i in (1, 2, 10, 11, 12)]
        assert await store.live_since("gpu1", live_sample(99).t) == []
    finally:
        store.close()


async def test_unknown_runs_and_bad_files_are_one_sentence_errors(_isolated_data: Path) -> None:
    store = RunStore()
    try:
        for call in (
            store.run(41),
            store.add_request(41, request_sample()),
            store.add_live(41, live_sample()),
            store.finish_run(41, "complete"),
        ):
            with pytest.raises(HistoryError, match=r"^There is no run 41 in the history; ") as exc:
                await call
            assert isinstance(exc.value, ConsoleError) and str(exc.value).count(". ") == 0
    finally:
        store.close()
    junk = _isolated_data / "junk.sqlite"
    junk.write_bytes(b"this is not a database, just some bytes" * 100)
    store = RunStore(junk)
    with pytest.raises(HistoryError, match="could not be read or written"):
        await store.runs()
    store.close()


# -- crashes and concurrent writers (real processes) -------------------------------------

WRITER = """
import asyncio, json, os, sys
from pathlib import Path
from console.analysis.records import LiveSample, RequestSample, RunInfo
from console.store import RunStore

async def main() -> None:
    job = json.loads(sys.stdin.readline())
    store = RunStore(Path(job["path"]))
    run_id = await store.start_run(RunInfo(**job["info"]))
    print(run_id, flush=True)
    if job["then"] == "finish":
        sys.stdin.readline()  # go: the other writer is ready too
    for data in job["requests"]:
        await store.add_request(run_id, RequestSample.from_dict(data))
    for data in job["live"]:
        await store.add_live(run_id, LiveSample.from_dict(data))
    print("written", flush=True)
    if job["then"] == "crash":
        os._exit(1)  # no finish_run, no close: what a kill -9 or a power cut leaves
    if job["then"] == "wait":
        sys.stdin.readline()  # a `watch` still going
        os._exit(0)
    await store.finish_run(run_id, "complete")
    store.close()

asyncio.run(main())
"""


def start_writer(path: Path, then: str, requests: int = 0, live: int = 0) -> subprocess.Popen:
    job = {
        "path": str(path),
        "info": run_info(method="watch" if live else "context-sweep").as_dict(),
        "requests": [request_sample(i).as_dict() for i in range(requests)],
        "live": [live_sample(i).as_dict() for i in range(live)],
        "then": then,
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(job) + "\n")
    proc.stdin.flush()
    return proc


async def test_a_killed_sweep_keeps_its_samples_and_is_marked_incomplete() -> None:
    path = default_history_path()
    proc = start_writer(path, "crash", requests=7)
    out, errors = proc.communicate(timeout=120)
    assert proc.returncode == 1, errors
    run_id = int(out.split()[0])
    # Nothing has opened the store since the crash: the file still says running.
    assert db_rows(path, "SELECT status FROM runs WHERE id = ?", run_id)[0][0] == "running"
    store = RunStore()
    try:
        run = await store.run(run_id)
    finally:
        store.close()
    assert run.status == "incomplete"
    assert run.requests == tuple(request_sample(i) for i in range(7))
    assert run.finished_at == request_sample(6).t  # the last moment it is known to have run


async def test_a_run_whose_writer_is_alive_is_left_running() -> None:
    path = default_history_path()
    proc = start_writer(path, "wait", live=5)
    try:
        assert proc.stdout is not None
        run_id = int(proc.stdout.readline())
        assert proc.stdout.readline().strip() == "written"
        store = RunStore()
        try:
            run = await store.run(run_id)
            assert run.status == "running" and run.writer_pid == proc.pid
            assert run.live == tuple(live_sample(i) for i in range(5))
            assert (await store.runs(status="running"))[0].id == run_id
        finally:
            store.close()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    store = RunStore()  # the writer is gone now
    try:
        assert (await store.run(run_id)).status == "incomplete"
    finally:
        store.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc start times")
async def test_a_reused_pid_does_not_keep_a_dead_run_running() -> None:
    store = RunStore()
    try:
        mine = await store.start_run(run_info())
        crashed = await store.start_run(run_info())
    finally:
        store.close()
    # `crashed` claims our pid, but from a process that started at another time.
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET writer_start = writer_start + 1 WHERE id = ?", (crashed,))
    store = RunStore()
    try:
        assert (await store.run(mine)).status == "running"
        assert (await store.run(crashed)).status == "incomplete"
    finally:
        store.close()


async def test_two_processes_write_one_new_file_at_once() -> None:
    path = default_history_path()
    procs = [start_writer(path, "finish", requests=120) for _ in range(2)]
    ids = []
    for proc in procs:  # both have opened (and so migrated) the file and started a run
        assert proc.stdout is not None
        ids.append(int(proc.stdout.readline()))
    for proc in procs:  # now both write their samples at once
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        _, errors = proc.communicate(timeout=180)
        assert proc.returncode == 0, errors
    store = RunStore()
    try:
        for run_id in ids:
            run = await store.run(run_id)
            assert run.status == "complete" and len(run.requests) == 120
    finally:
        store.close()


async def test_calls_wait_for_a_locked_file_off_the_event_loop() -> None:
    store = RunStore()
    try:
        run_id = await store.start_run(run_info())
        other = sqlite3.connect(store.path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process mid-write holds the write lock
        ticks = 0
        writing = asyncio.create_task(store.add_request(run_id, request_sample()))
        for _ in range(20):
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 20 and not writing.done()  # the loop ran while the insert waited
        other.execute("COMMIT")
        other.close()
        await asyncio.wait_for(writing, 10)
        # Many coroutines at once share the one connection safely.
        await asyncio.gather(*(store.add_request(run_id, request_sample(i)) for i in range(50)))
        assert len((await store.run(run_id)).requests) == 51
    finally:
        store.close()


async def test_a_file_locked_too_long_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs_module, "BUSY_TIMEOUT_S", 0.2)
    store = RunStore()
    try:
        run_id = await store.start_run(run_info())
        other = sqlite3.connect(store.path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(HistoryError, match=r"stayed locked by another process for 0 s"):
                await store.add_request(run_id, request_sample())
        finally:
            other.execute("ROLLBACK")
            other.close()
        await store.add_request(run_id, request_sample())  # usable again once released
        assert len((await store.run(run_id)).requests) == 1
    finally:
        store.close()
