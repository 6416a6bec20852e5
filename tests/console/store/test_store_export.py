"""Comparing two stored runs point by point, and both exports read back."""

from __future__ import annotations

import csv
import io
import json

import pytest

from console.analysis.records import LiveSample, RequestSample
from console.store import RunStore, StoredRun, compare, export_csv, export_json
from console.store.export import CSV_COLUMNS
from tests.console.factories import live_sample, request_sample, run_info


async def store_run(
    flags: dict, requests: list[RequestSample], live: list[LiveSample] = ()
) -> StoredRun:
    store = RunStore()
    try:
        run_id = await store.start_run(run_info(flags=flags))
        for sample in requests:
            await store.add_request(run_id, sample)
        for sample in live:
            await store.add_live(run_id, sample)
        await store.finish_run(run_id, "complete")
        return await store.run(run_id)
    finally:
        store.close()


def point(context: int, text: str, tok_s: list[float], commit: float, **kw: object) -> list:
    return [
        request_sample(i, context=context, text_type=text, tok_s=v, commit=commit, **kw)
        for i, v in enumerate(tok_s)
    ]


async def test_compare_lines_up_pooled_figures_per_point_without_flagged_samples() -> None:
    a = await store_run(
        {"draft-window": 8, "tree-budget": 64, "old-flag": True},
        point(1024, "code", [100.0, 110.0], 3.0)
        # an outlier: counted in, it would pull the pooled rate up
        + point(1024, "code", [1000.0], 3.0, flagged="latency outlier")
        + point(4096, "code", [80.0, 90.0, 70.0], 2.5)
        + point(1024, "prose", [60.0], 2.0),
    )
    b = await store_run(
        {"draft-window": 16, "tree-budget": 64, "new-flag": "x"},
        point(1024, "code", [126.0], 4.0, streamed=False, ttft_s=None)
        + point(4096, "code", [72.0], 2.5)
        + point(8192, "code", [50.0], 2.0),
    )
    typed = compare(a, b)
    first_point = typed.points[0]
    assert (first_point.context_tokens, first_point.text_type) == (1024, "code")
    # the protocol: only the passage both runs read (code-0) is compared; A's second
    # passage (code-1) has no partner in B and stays out of both sides
    pooled_a = 100.0
    tok_s = first_point.figure("decode_tok_s")
    assert tok_s.a == pytest.approx(pooled_a) and tok_s.b == pytest.approx(126.0)
    assert tok_s.change.ratio == pytest.approx(126 / pooled_a)
    assert tok_s.a_interval.low <= tok_s.a <= tok_s.a_interval.high
    assert not tok_s.finding  # one pair: too few rounds to resample, never a finding
    assert "too few rounds" in tok_s.change_text()
    for figures in (first_point, typed.points[1]):
        for side in ("a", "b"):  # tok/s = commit / step on every row, exactly
            t, c, st = (getattr(figures.figure(n), side) for n in
                        ("decode_tok_s", "commit_len", "step_time_s"))  # fmt: skip
            assert t == pytest.approx(c / st, rel=1e-12)
    assert typed.flags.changed == {"draft-window": (8, 16)} and not typed.flags.same
    result = typed.as_dict()  # the JSON shape, as `history compare --json` prints it
    assert result["a"]["id"] == a.id and result["b"]["id"] == b.id
    assert (result["a"]["samples"], result["a"]["flagged"]) == (6, 1)
    assert result["flags"] == {
        "changed": {"draft-window": [8, 16]},
        "added": {"new-flag": "x"},
        "removed": {"old-flag": True},
    }
    assert [(p["context_tokens"], p["text_type"]) for p in result["points"]] == [
        (1024, "code"),
        (4096, "code"),
    ]
    first, second = result["points"]
    assert first["a"]["decode_tok_s"] == pytest.approx(pooled_a) and first["a"]["n"] == 2
    assert first["b"]["decode_tok_s"] == pytest.approx(126.0) and first["b"]["n"] == 1
    assert first["change"]["decode_tok_s"]["ratio"] == pytest.approx(126 / pooled_a)
    assert first["change"]["decode_tok_s"]["finding"] is False
    iv = first["interval"]["a"]["decode_tok_s"]
    assert iv["low"] <= first["a"]["decode_tok_s"] <= iv["high"]
    # every sample has 127 tokens in 43 steps: the pooled commit did not move at all
    assert first["a"]["commit_len"] == pytest.approx(127 / 43)
    assert first["change"]["commit_len"]["percent"] == pytest.approx(0.0)
    # step time = all decode time / all steps
    assert first["a"]["step_time_s"] == pytest.approx(1.27 / 43)
    assert first["b"]["ttft_s"] is None and first["change"]["ttft_s"] is None
    assert second["a"]["decode_tok_s"] == pytest.approx(80.0)  # code-0, the shared passage
    # TTFT of sample i is 0.0421 + i ms: means 0.0431 (i = 0..2) and 0.0421 (i = 0)
    assert second["change"]["ttft_s"]["ratio"] == pytest.approx(0.0421 / 0.0431)
    assert result["only_a"] == [{"context_tokens": 1024, "text_type": "prose"}]
    assert result["only_b"] == [{"context_tokens": 8192, "text_type": "code"}]
    json.dumps(result)  # what `history compare --json` prints

    store = RunStore()
    try:
        (listed,) = [r for r in await store.runs() if r.id == a.id]
    finally:
        store.close()
    with pytest.raises(ValueError, match="without its samples"):
        compare(listed, b)


async def test_csv_export_reads_back_every_sample_of_every_run() -> None:
    a = await store_run({"draft-window": 8}, point(1024, "code", [100.0, 110.0], 3.0))
    b = await store_run(
        {"draft-window": 16},
        point(2048, "prose", [90.0], 2.5, flagged="retried, then slow", ttft_s=None),
        [live_sample(0), live_sample(1, tok_s=None, note='said "hi", then\nleft')],
    )
    out = io.StringIO()
    export_csv([a, b], out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert tuple(rows[0].keys()) == CSV_COLUMNS
    assert [(r["run_id"], r["kind"]) for r in rows] == [
        (str(a.id), "request"),
        (str(a.id), "request"),
        (str(b.id), "request"),
        (str(b.id), "live"),
        (str(b.id), "live"),
    ]
    for row, sample in zip(rows[:3], a.requests + b.requests, strict=True):
        for name, value in sample.as_dict().items():
            if value is None:
                assert row[name] == "", name
            elif isinstance(value, bool):
                assert row[name] == str(value).lower(), name
            elif isinstance(value, list | dict):
                assert json.loads(row[name]) == value, name
            else:
                assert type(value)(row[name]) == value, name
        assert row["run_status"] == "complete" and row["run_host"] == "gpu1"
        assert row["source"] == "" and row["note"] == ""
    assert rows[2]["run_flags_hash"] == b.info.flags_hash != a.info.flags_hash
    live = rows[4]
    assert (live["tok_s"], live["note"], live["queue"]) == ("", 'said "hi", then\nleft', "2")
    assert float(rows[3]["t"]) == live_sample(0).t and float(rows[3]["commit_len"]) == 3.25
    assert rows[3]["decode_tok_s"] == "" and rows[3]["text_type"] == ""

    one = io.StringIO()
    export_csv(a, one)  # one run alone
    assert len(list(csv.DictReader(io.StringIO(one.getvalue())))) == 2


async def test_json_export_round_trips_the_records() -> None:
    a = await store_run({"draft-window": 8}, point(1024, "code", [100.0, 110.0], 3.0))
    b = await store_run({}, [], [live_sample(0), live_sample(1)])
    out = io.StringIO()
    export_json([a, b], out)
    document = json.loads(out.getvalue())
    assert document["format"] == "specconsole-history" and document["version"] == 1
    first, second = document["runs"]
    assert first["id"] == a.id and first["status"] == "complete"
    assert first["flags"] == {"draft-window": 8} and first["params"] == a.info.params
    assert tuple(RequestSample.from_dict(d) for d in first["requests"]) == a.requests
    assert first["live"] == []
    assert tuple(LiveSample.from_dict(d) for d in second["live"]) == b.live
    assert second["requests"] == [] and second["request_count"] == 0
