"""Two stored runs side by side: did the change between them move throughput, and which
factor moved it?

Runs are lined up per measured point, (context tokens, text type), because a figure is
only comparable at equal context and text: step time grows with context and commit length
depends on the text. Each figure is the median of the point's unflagged samples; a point
only one run measured is listed, not compared. The flags diff says what was changed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from console.measure.comparison import Change, FigurePair
from console.measure.records import RequestSample
from console.measure.stats import spread
from console.store.runs import StoredRun

FIGURES = ("decode_tok_s", "commit_len", "step_time_s", "ttft_s")
Point = tuple[int, str]  # (context_tokens, text_type)


@dataclass(frozen=True)
class RunHeader:
    """What a compared run is, and how many of its samples count."""

    id: int
    host: str
    engine: str
    engine_version: str | None
    method: str
    status: str
    started_at: float
    flags_hash: str
    samples: int  # unflagged: the ones in the figures
    flagged: int

    @classmethod
    def of(cls, run: StoredRun) -> RunHeader:
        flagged = sum(1 for s in run.requests if s.flagged is not None)
        return cls(
            id=run.id,
            host=run.info.host,
            engine=run.info.engine,
            engine_version=run.info.engine_version,
            method=run.info.method,
            status=run.status,
            started_at=run.info.started_at,
            flags_hash=run.info.flags_hash,
            samples=len(run.requests) - flagged,
            flagged=flagged,
        )

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class FlagsDiff:
    """The flags from run A to run B: changed (old, new), added and removed."""

    changed: dict[str, tuple[Any, Any]]
    added: dict[str, Any]
    removed: dict[str, Any]

    @property
    def same(self) -> bool:
        return not (self.changed or self.added or self.removed)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {
            "changed": {k: list(v) for k, v in self.changed.items()},
            "added": dict(self.added),
            "removed": dict(self.removed),
        }


@dataclass(frozen=True)
class PointComparison:
    """One (context, text type) point measured by both runs: sample counts and each
    figure of `FIGURES` side by side."""

    context_tokens: int
    text_type: str
    n_a: int
    n_b: int
    figures: tuple[FigurePair, ...]

    def figure(self, name: str) -> FigurePair:
        return next(f for f in self.figures if f.name == name)

    def as_dict(self) -> dict[str, Any]:
        changes = {f.name: f.change for f in self.figures}
        return {
            "context_tokens": self.context_tokens,
            "text_type": self.text_type,
            "a": {"n": self.n_a, **{f.name: f.a for f in self.figures}},
            "b": {"n": self.n_b, **{f.name: f.b for f in self.figures}},
            "change": {k: c.as_dict() if c else None for k, c in changes.items()},
        }


@dataclass(frozen=True)
class RunComparison:
    """Run B against run A: headers, flags diff, shared points, points only one has."""

    a: RunHeader
    b: RunHeader
    flags: FlagsDiff
    points: tuple[PointComparison, ...]
    only_a: tuple[Point, ...]
    only_b: tuple[Point, ...]

    def as_dict(self) -> dict[str, Any]:
        """What `history compare --json` prints."""
        return {
            "a": self.a.as_dict(),
            "b": self.b.as_dict(),
            "flags": self.flags.as_dict(),
            "points": [p.as_dict() for p in self.points],
            "only_a": [_point_dict(p) for p in self.only_a],
            "only_b": [_point_dict(p) for p in self.only_b],
        }


def compare(a: StoredRun, b: StoredRun) -> RunComparison:
    """The figures of `b` against `a` per shared point, with ratio (b / a) and percent
    change, plus the flags diff from `a` to `b`. Both runs need their samples loaded."""
    for run in (a, b):
        if not run.samples_loaded:
            raise ValueError(f"run {run.id} was read without its samples; use RunStore.run()")
    points_a, points_b = point_medians(a), point_medians(b)
    shared = sorted(points_a.keys() & points_b.keys(), key=_point_order)
    return RunComparison(
        a=RunHeader.of(a),
        b=RunHeader.of(b),
        flags=flags_diff(a.info.flags, b.info.flags),
        points=tuple(
            PointComparison(
                context_tokens=point[0],
                text_type=point[1],
                n_a=points_a[point]["n"],
                n_b=points_b[point]["n"],
                figures=tuple(
                    FigurePair(f, points_a[point][f], points_b[point][f]) for f in FIGURES
                ),
            )
            for point in shared
        ),
        only_a=tuple(sorted(points_a.keys() - shared, key=_point_order)),
        only_b=tuple(sorted(points_b.keys() - shared, key=_point_order)),
    )


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


def change(old: float | None, new: float | None) -> Change | None:
    """new / old with the change in percent; None if either is missing or old is zero."""
    return Change.between(old, new)


def flags_diff(old: dict[str, Any], new: dict[str, Any]) -> FlagsDiff:
    return FlagsDiff(
        changed={k: (old[k], new[k]) for k in old if k in new and old[k] != new[k]},
        added={k: new[k] for k in new if k not in old},
        removed={k: old[k] for k in old if k not in new},
    )


def _median(values: Any) -> float | None:
    summary = spread(values)  # the measurement core's own median, None when all are missing
    return summary.median if summary else None


def _point_order(point: Point) -> tuple[str, int]:
    return point[1], point[0]  # one text type's points together, by context


def _point_dict(point: Point) -> dict[str, Any]:
    return {"context_tokens": point[0], "text_type": point[1]}
