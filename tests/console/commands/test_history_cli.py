"""`specconsole history` end to end: real `python -m console.cli` processes reading a
history file filled here, through `SPECCONSOLE_DATA_DIR`."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.analysis.noise_profile import NoiseProfile
from console.analysis.records import LiveSample, RequestSample
from console.store import RunStore
from tests.console.factories import live_sample, request_sample, run_info

REPO = Path(__file__).resolve().parents[3]


def history(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "console.cli", "history", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_sentence_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("specconsole: "), proc.stderr
    return lines[0]


@pytest.fixture
async def filled() -> dict[str, int]:
    """Two finished sweeps on gpu1 (flags differ), then a watch on gpu2 still marked running
    by a writer that is gone."""
    store = RunStore()
    try:
        a = await store.start_run(run_info(started_at=1_700_000_000.0))
        for i, (context, tok_s) in enumerate([(1024, 100.0), (1024, 110.0), (4096, 80.0)]):
            await store.add_request(a, request_sample(i, context=context, tok_s=tok_s))
        outlier = request_sample(9, tok_s=900.0, flagged="latency outlier")
        await store.add_request(a, outlier)
        await store.finish_run(a, "complete", {"verdict": "step time rose"})
        b = await store.start_run(
            run_info(started_at=1_700_000_800.0, flags={"draft-window": 16, "tree-budget": 64})
        )
        for i, (context, tok_s) in enumerate([(1024, 126.0), (4096, 72.0), (8192, 50.0)]):
            sample = request_sample(
                i, context=context, tok_s=tok_s, commit=4.0, t=1_700_000_800.25 + i
            )  # read after A's, as it started
            await store.add_request(b, sample)
        await store.finish_run(b, "complete")
        w = await store.start_run(run_info("gpu2", "watch", started_at=1_700_001_000.0))
        for i in range(3):
            await store.add_live(w, live_sample(i))
        await store.finish_run(w, "incomplete")
    finally:
        store.close()
    return {"a": a, "b": b, "watch": w}


def test_an_empty_history_is_one_sentence() -> None:
    assert "No runs are stored yet" in one_sentence_error(history("list"))
    assert "There is no run 1 in the history" in one_sentence_error(history("show", "1"))


def test_list_newest_first_with_filters_and_json(filled: dict[str, int]) -> None:
    proc = history("list")
    assert proc.returncode == 0, proc.stderr
    header, *rows = proc.stdout.splitlines()
    assert header.split() == [
        "ID", "STARTED", "TOOK", "HOST", "ENGINE", "METHOD", "KIND", "STATUS", "REQ", "LIVE",
        "FLAGS",
    ]  # fmt: skip
    assert [int(r.split()[0]) for r in rows] == [filled["watch"], filled["b"], filled["a"]]
    watch = rows[0].split()
    assert watch[4:] == ["gpu2", "builtin", "0.4.1", "watch", "watch", "incomplete", "0", "3"] + [
        run_info().flags_hash
    ]
    # Columns line up: every row's STATUS starts where the header's does.
    at = header.index("STATUS")
    assert all(r[at - 1] == " " and r[at] != " " for r in rows)

    proc = history("list", "--host", "gpu1", "--method", "context-sweep", "--limit", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)
    assert run["id"] == filled["b"] and run["flags"] == {"draft-window": 16, "tree-budget": 64}
    assert run["request_count"] == 3 and "requests" not in run
    assert "No stored run has host 'gpu9'" in one_sentence_error(history("list", "--host", "gpu9"))


def test_show_prints_header_flags_and_samples(filled: dict[str, int]) -> None:
    proc = history("show", str(filled["a"]))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"run {filled['a']}: context-sweep (sweep) on gpu1\n")
    assert "  status    complete\n" in out and "    --draft-window = 8\n" in out
    assert "    verdict = step time rose\n" in out
    assert "request samples: 4, 1 flagged\n" in out
    table = out.split("request samples: 4, 1 flagged\n")[1].splitlines()
    assert table[0].split() == [
        "CONTEXT", "TEXT", "TOK/S", "COMMIT", "STEP", "MS", "TTFT", "MS", "SOURCE", "FLAGGED",
    ]  # fmt: skip
    assert table[1].split() == ["1024", "code", "100.0", "3.00", "30.00", "42.1", "server"]
    assert table[4].split() == ["1024", "code", "900.0", "3.00", "3.33", "51.1", "server"] + [
        "latency",
        "outlier",
    ]
    proc = history("show", str(filled["watch"]))
    assert "live samples: 3\n" in proc.stdout and "point 2" in proc.stdout

    proc = history("show", str(filled["a"]), "--json")
    data = json.loads(proc.stdout)
    assert data["summary"] == {"verdict": "step time rose"}
    assert RequestSample.from_dict(data["requests"][3]) == request_sample(
        9, tok_s=900.0, flagged="latency outlier"
    )
    assert "There is no run 99 in the history" in one_sentence_error(history("show", "99"))


def test_compare_lines_up_points_and_flags(filled: dict[str, int]) -> None:
    proc = history("compare", str(filled["a"]), str(filled["b"]))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "  --draft-window: 8 -> 16" in lines
    assert "  --chat-template: null -> (unset)" in lines
    tok_s = [line.split() for line in lines if " tok/s " in line]
    # The protocol: only the passage both runs read (code-0, 100 tok/s in A) is compared;
    # A's second passage has no partner in B. The outlier (900 tok/s) is flagged and left
    # out. One pair is too few rounds to resample: the +26% is not a finding, and says so.
    first, second = tok_s
    assert first[:4] == ["1024", "code", "tok/s", "100.0"]
    assert first[-1] == "2/1" and first[4:6] == ["126.0", "+26%"]
    assert "(1 pair: too few rounds to resample)" in " ".join(first)
    assert second[:5] == ["4096", "code", "tok/s", "80.0", "72.0"] and second[-1] == "1/1"
    assert any(line.startswith("per point measured by both runs") for line in lines)
    assert "only in B: 8192 code" in lines
    assert any("no drift measured for this host" in line for line in lines)

    proc = history("compare", str(filled["a"]), str(filled["b"]), "--json")
    result = json.loads(proc.stdout)
    assert [p["context_tokens"] for p in result["points"]] == [1024, 4096]
    change = result["points"][0]["change"]["decode_tok_s"]
    assert change["ratio"] == pytest.approx(126 / 100)
    assert change["finding"] is False
    assert change["text"] == "+26% (1 pair: too few rounds to resample)"
    assert result["drift"]["measured"] is False
    assert result["flags"]["changed"] == {"draft-window": [8, 16]}
    assert "no run 77" in one_sentence_error(history("compare", str(filled["a"]), "77"))


async def test_compare_carries_the_hosts_measured_drift(filled: dict[str, int]) -> None:
    store = RunStore()
    try:
        profile = NoiseProfile(host="gpu1", engine="builtin", flags_hash="x", points=(),
                               shifts=(0.05, -0.03), restart_s=(8.0,))  # fmt: skip
        await store.add_noise_profile(profile)
    finally:
        store.close()
    proc = history("compare", str(filled["a"]), str(filled["b"]), "--json")
    drift = json.loads(proc.stdout)["drift"]
    assert drift["measured"] and drift["shift_sd"] == pytest.approx(profile.drift_sd)  # its bound
    assert "other flags" in drift["source"]  # calibrated with flags neither run had
    text = history("compare", str(filled["a"]), str(filled["b"])).stdout
    assert "change intervals include the host's drift ± " in text


def test_export_csv_to_stdout_and_json_to_a_file(filled: dict[str, int], tmp_path: Path) -> None:
    proc = history("export", str(filled["a"]), str(filled["watch"]), "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [(int(r["run_id"]), r["kind"]) for r in rows] == [(filled["a"], "request")] * 4 + [
        (filled["watch"], "live")
    ] * 3
    assert [float(r["decode_tok_s"]) for r in rows[:4]] == [100.0, 110.0, 80.0, 900.0]
    assert rows[3]["flagged"] == "latency outlier" and rows[0]["flagged"] == ""

    out = tmp_path / "runs.json"
    proc = history(
        "export", str(filled["b"]), str(filled["watch"]), "--format", "json", "-o", str(out)
    )
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    runs = json.loads(out.read_text())["runs"]
    assert [r["id"] for r in runs] == [filled["b"], filled["watch"]]
    assert [RequestSample.from_dict(d).decode_tok_s for d in runs[0]["requests"]] == [
        126.0,
        72.0,
        50.0,
    ]
    assert tuple(LiveSample.from_dict(d) for d in runs[1]["live"]) == tuple(
        live_sample(i) for i in range(3)
    )

    bad = history("export", str(filled["a"]), "--format", "xml")
    assert "Unknown export format 'xml'" in one_sentence_error(bad)
    missing = tmp_path / "never.csv"
    unknown = history("export", str(filled["a"]), "404", "-o", str(missing))
    assert "There is no run 404" in one_sentence_error(unknown)
    assert not missing.exists()
