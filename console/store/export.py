"""Runs out of the store, for a spreadsheet, a notebook or another machine.

CSV is one flat table: a row per sample, request and live samples alike (`kind` says
which), each row carrying its run's columns (`run_*`) so rows from several runs can be
filtered and pivoted without a join. Figures the two kinds share (`t`, `context_tokens`,
`commit_len`, `step_time_s`) fill the same column. JSON is the stored records as they
are, per run, so `RequestSample.from_dict` reads them back.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Iterable
from typing import Any, TextIO

from console.analysis.records import LiveSample, RequestSample
from console.store.runs import StoredRun

JSON_FORMAT = "specconsole-history"
JSON_VERSION = 1

RUN_COLUMNS = (
    "run_id",
    "run_host",
    "run_engine",
    "run_engine_version",
    "run_method",
    "run_flags_hash",
    "run_status",
    "run_started_at",
    "kind",
)
REQUEST_COLUMNS = tuple(f.name for f in dataclasses.fields(RequestSample))
LIVE_COLUMNS = tuple(f.name for f in dataclasses.fields(LiveSample))
CSV_COLUMNS = (
    RUN_COLUMNS + REQUEST_COLUMNS + tuple(c for c in LIVE_COLUMNS if c not in REQUEST_COLUMNS)
)


def export_csv(runs: StoredRun | Iterable[StoredRun], out: TextIO) -> None:
    """Write the samples of one run or several as CSV: header row, then one row each."""
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for run in _loaded(runs):
        head = {
            "run_id": run.id,
            "run_host": run.info.host,
            "run_engine": run.info.engine,
            "run_engine_version": run.info.engine_version,
            "run_method": run.info.method,
            "run_flags_hash": run.info.flags_hash,
            "run_status": run.status,
            "run_started_at": run.info.started_at,
        }
        for kind, samples in (("request", run.requests), ("live", run.live)):
            for sample in samples:
                row = {**head, "kind": kind, **sample.as_dict()}
                writer.writerow({k: csv_cell(v) for k, v in row.items()})


def export_json(runs: StoredRun | Iterable[StoredRun], out: TextIO) -> None:
    """Write one run or several, samples included, as one JSON document."""
    document = {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "runs": [run.as_dict() for run in _loaded(runs)],
    }
    json.dump(document, out, indent=2, default=str)
    out.write("\n")


def csv_cell(value: Any) -> str:
    """None as an empty cell, booleans as true/false, lists and dicts as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def _loaded(runs: StoredRun | Iterable[StoredRun]) -> list[StoredRun]:
    selected = [runs] if isinstance(runs, StoredRun) else list(runs)
    for run in selected:
        if not run.samples_loaded:
            raise ValueError(f"run {run.id} was read without its samples; use RunStore.run()")
    return selected
