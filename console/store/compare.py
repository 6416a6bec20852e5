"""Two stored runs side by side: did the change between them move throughput, and which
factor moved it?

Runs are lined up per measured point, (context tokens, text type), because a figure is
only comparable at equal context and text: step time grows with context and commit length
depends on the text. tok/s, commit and step time are pooled over the point's unflagged
samples (sum of tokens / sum of steps / sum of decode time, so tok/s = commit / step on
every row); TTFT is the mean over the samples that have one. Each carries a bootstrap
interval per run, and each change the interval of its ratio: a change whose interval
holds "no change" is within noise, not a finding. A point only one run measured is
listed, not compared. The flags diff says what was changed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from console.analysis.comparison import Change, FigurePair, pooled_pairs
from console.analysis.intervals import bootstrap, changes_between
from console.analysis.noise_profile import Drift
from console.analysis.pairing import paired_figures
from console.analysis.records import RequestSample
from console.sampling import comparable, mixed_sampling_sentence
from console.store.errors import HistoryError
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
    sampling: str = "greedy"  # the label of the sampling its requests were decoded at

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
            sampling=run.info.sampling_settings.label,
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
        def iv(f: FigurePair, side: str) -> dict[str, float] | None:
            interval = f.a_interval if side == "a" else f.b_interval
            return interval.as_dict() if interval else None

        return {
            "context_tokens": self.context_tokens,
            "text_type": self.text_type,
            "a": {"n": self.n_a, **{f.name: f.a for f in self.figures}},
            "b": {"n": self.n_b, **{f.name: f.b for f in self.figures}},
            "interval": {side: {f.name: iv(f, side) for f in self.figures} for side in "ab"},
            "change": {f.name: f.change_dict() for f in self.figures},
            "pooled": ["decode_tok_s", "commit_len", "step_time_s"],
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
    drift: Drift = field(default_factory=Drift.none)

    def as_dict(self) -> dict[str, Any]:
        """What `history compare --json` prints."""
        return {
            "a": self.a.as_dict(),
            "b": self.b.as_dict(),
            "flags": self.flags.as_dict(),
            "points": [p.as_dict() for p in self.points],
            "only_a": [_point_dict(p) for p in self.only_a],
            "only_b": [_point_dict(p) for p in self.only_b],
            "drift": self.drift.as_dict(),
        }


def check_sampling(a: StoredRun, b: StoredRun, *, allow_mixed: bool = False) -> None:
    """Refuse, in one sentence naming both, two runs decoded at different sampling:
    acceptance depends on it, so their figures describe different traffic."""
    sa, sb = a.info.sampling_settings, b.info.sampling_settings
    if not allow_mixed and not comparable(sa, sb):
        raise HistoryError(mixed_sampling_sentence(sa, sb))


def compare(
    a: StoredRun,
    b: StoredRun,
    *,
    seed: int = 0,
    drift: Drift | None = None,
    allow_mixed: bool = False,
) -> RunComparison:
    """The figures of `b` against `a` per shared point, with ratio (b / a), its interval
    and percent change, plus the flags diff from `a` to `b`. Both runs need their samples
    loaded. The figures go through the comparison protocol (`pairing.paired_figures`):
    balanced and paired by passage, with `drift` (the host's, from its noise profile) in
    every time interval; two runs are two blocks, so A-B. Runs at different sampling are
    refused unless `allow_mixed` (`check_sampling`)."""
    check_sampling(a, b, allow_mixed=allow_mixed)
    for run in (a, b):
        if not run.samples_loaded:
            raise ValueError(f"run {run.id} was read without its samples; use RunStore.run()")
    points_a, points_b = point_samples(a), point_samples(b)
    shared = sorted(points_a.keys() & points_b.keys(), key=_point_order)
    return RunComparison(
        a=RunHeader.of(a),
        b=RunHeader.of(b),
        flags=flags_diff(a.info.flags, b.info.flags),
        points=tuple(
            PointComparison(
                context_tokens=point[0],
                text_type=point[1],
                n_a=len(points_a[point]),
                n_b=len(points_b[point]),
                figures=point_figures(
                    points_a[point], points_b[point], seed=seed, drift=drift, rows=len(shared)
                ),
            )
            for point in shared
        ),
        drift=drift or Drift.none(),
        only_a=tuple(sorted(points_a.keys() - shared, key=_point_order)),
        only_b=tuple(sorted(points_b.keys() - shared, key=_point_order)),
    )


def point_samples(run: StoredRun) -> dict[Point, list[RequestSample]]:
    """Per point: the run's unflagged samples."""
    groups: dict[Point, list[RequestSample]] = {}
    for sample in run.requests:
        if sample.flagged is None:
            groups.setdefault((sample.context_tokens, sample.text_type), []).append(sample)
    return groups


def point_figures(
    a: list[RequestSample],
    b: list[RequestSample],
    *,
    seed: int = 0,
    drift: Drift | None = None,
    rows: int = 1,
) -> tuple[FigurePair, ...]:
    """Each figure of `FIGURES` for one point of two runs: tok/s, commit and step time
    under the comparison protocol where the runs share passages (else pooled and
    resampled on their own), and mean TTFT, each with intervals; `rows`: the points
    compared together (`pairing.family_level`)."""
    paired = paired_figures(a, b, drift=drift, rows=rows)
    pooled = paired.pairs if paired is not None else pooled_pairs(a, b, seed=seed)
    return (*(pooled[name] for name in FIGURES[:3]), _ttft_pair(a, b, seed=seed))


def _mean_ttft(samples: list[RequestSample]) -> float:
    return sum(s.ttft_s or 0.0 for s in samples) / len(samples)


def _ttft_pair(a: list[RequestSample], b: list[RequestSample], *, seed: int) -> FigurePair:
    """Mean TTFT over the samples that have one (streamed requests), with intervals."""
    ta = [s for s in a if s.ttft_s is not None]
    tb = [s for s in b if s.ttft_s is not None]
    ia = bootstrap([ta], _mean_ttft, seed=seed) if ta else None
    ib = bootstrap([tb], _mean_ttft, seed=seed) if tb else None
    moved = None
    if ta and tb and _mean_ttft(ta) > 0:
        (moved,) = changes_between(ta, tb, [_mean_ttft], seed=seed)
    return FigurePair("ttft_s", ia.value if ia else None, ib.value if ib else None, ia, ib, moved)


def change(old: float | None, new: float | None) -> Change | None:
    """new / old with the change in percent; None if either is missing or old is zero."""
    return Change.between(old, new)


def flags_diff(old: dict[str, Any], new: dict[str, Any]) -> FlagsDiff:
    return FlagsDiff(
        changed={k: (old[k], new[k]) for k in old if k in new and old[k] != new[k]},
        added={k: new[k] for k in new if k not in old},
        removed={k: old[k] for k in old if k not in new},
    )


def _point_order(point: Point) -> tuple[str, int]:
    return point[1], point[0]  # one text type's points together, by context


def _point_dict(point: Point) -> dict[str, Any]:
    return {"context_tokens": point[0], "text_type": point[1]}
