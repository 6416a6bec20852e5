"""Two stored runs side by side: did the change between them move throughput, and which
factor moved it?

Runs are lined up per measured point, (context tokens, text type), because a figure is
only comparable at equal context and text: step time grows with context and commit length
depends on the text. Each figure is the median of the point's unflagged samples; a point
only one run measured is listed, not compared. The flags diff says what was changed.
"""

from __future__ import annotations

from typing import Any

from console.measure.records import RequestSample
from console.measure.stats import spread
from console.store.runs import StoredRun

FIGURES = ("decode_tok_s", "commit_len", "step_time_s", "ttft_s")
Point = tuple[int, str]  # (context_tokens, text_type)


def compare(a: StoredRun, b: StoredRun) -> dict[str, Any]:
    """The figures of `b` against `a` per shared point, with ratio (b / a) and percent
    change, plus the flags diff from `a` to `b`. Both runs need their samples loaded."""
    for run in (a, b):
        if not run.samples_loaded:
            raise ValueError(f"run {run.id} was read without its samples; use RunStore.run()")
    points_a, points_b = point_medians(a), point_medians(b)
    shared = sorted(points_a.keys() & points_b.keys(), key=_point_order)
    return {
        "a": _header(a),
        "b": _header(b),
        "flags": flags_diff(a.info.flags, b.info.flags),
        "points": [
            {
                "context_tokens": point[0],
                "text_type": point[1],
                "a": points_a[point],
                "b": points_b[point],
                "change": {f: change(points_a[point][f], points_b[point][f]) for f in FIGURES},
            }
            for point in shared
        ],
        "only_a": [_point_dict(p) for p in sorted(points_a.keys() - shared, key=_point_order)],
        "only_b": [_point_dict(p) for p in sorted(points_b.keys() - shared, key=_point_order)],
    }


def point_medians(run: StoredRun) -> dict[Point, dict[str, Any]]:
    """Per point: the count of unflagged samples and the median of each figure over them
    (None where no sample has the figure, e.g. TTFT of unstreamed requests)."""
    groups: dict[Point, list[RequestSample]] = {}
    for sample in run.requests:
        if sample.flagged is None:
            groups.setdefault((sample.context_tokens, sample.text_type), []).append(sample)
    return {
        point: {"n": len(samples), **{f: _median(getattr(s, f) for s in samples) for f in FIGURES}}
        for point, samples in groups.items()
    }


def change(old: float | None, new: float | None) -> dict[str, float] | None:
    """{"ratio": new / old, "percent": the change in percent}; None if either is missing
    or old is zero."""
    if old is None or new is None or old == 0:
        return None
    ratio = new / old
    return {"ratio": ratio, "percent": (ratio - 1.0) * 100.0}


def flags_diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        "changed": {k: [old[k], new[k]] for k in old if k in new and old[k] != new[k]},
        "added": {k: new[k] for k in new if k not in old},
        "removed": {k: old[k] for k in old if k not in new},
    }


def _median(values: Any) -> float | None:
    summary = spread(values)  # the measurement core's own median, None when all are missing
    return summary.median if summary else None


def _point_order(point: Point) -> tuple[str, int]:
    return point[1], point[0]  # one text type's points together, by context


def _point_dict(point: Point) -> dict[str, Any]:
    return {"context_tokens": point[0], "text_type": point[1]}


def _header(run: StoredRun) -> dict[str, Any]:
    flagged = sum(1 for s in run.requests if s.flagged is not None)
    return {
        "id": run.id,
        "host": run.info.host,
        "engine": run.info.engine,
        "engine_version": run.info.engine_version,
        "method": run.info.method,
        "status": run.status,
        "started_at": run.info.started_at,
        "flags_hash": run.info.flags_hash,
        "samples": len(run.requests) - flagged,
        "flagged": flagged,
    }
