"""Do the verdict's intervals hold on passages the sweep never read? (`bench coverage`)

A run is three blocks on the engine as it stands, stored nowhere (a benchmark's sweep
must not become the latest sweep a later `diagnose` explains with):

1. the model sweep as `specconsole sweep` takes it by default (`model_sweep_rule`:
   `MODEL_PASSAGES` passages a point, in rounds until narrow);
2. the held-out block: at every point of the sweep, `held_out` requests, one a passage,
   on passage windows the sweep never read (from `MODEL_PASSAGES` on), interleaved over
   the points round by round so drift spreads over all of them;
3. the re-read: the sweep's own passages once more at every point, for the paired null
   (the engine did not change: the comparison's interval should hold "no change").

`analysis.coverage.score` then counts, per point, how many held-out figures the point's
95% band holds (the passage term and one request's timing noise, as the verdict builds a
typed figure's), and the same for a timing-only band, so the table shows what the
passage term does. Pure scoring lives there; this module only measures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.coverage import TARGET, PointCoverage, judge, score, wilson
from console.analysis.records import RequestSample
from console.analysis.repeat_rule import MODEL_PASSAGES, model_sweep_rule
from console.measure import methods
from console.measure.prompts import WINDOWS
from console.measure.session import MeasureError, MeasureSession

CONTEXTS = (256, 768, 1280, 1800)  # 4 contexts x 2 types: the sweep shape
TEXT_TYPES = ("code", "prose")
HELD_OUT = 20  # held-out requests a point (one passage each)
OUTPUT = 96

Tick = Callable[[int, int], None]


@dataclass
class CoverageResult:
    points: list[PointCoverage]
    params: dict[str, Any]
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return sum(p.n for p in self.points)

    @property
    def inside(self) -> int:
        return sum(p.inside for p in self.points)

    @property
    def timing_inside(self) -> int:
        return sum(p.timing_inside for p in self.points)

    @property
    def nulls(self) -> list[bool]:
        return [p.paired.holds for p in self.points if p.paired is not None]

    def table(self) -> list[str]:
        """One line a point, then the pooled line and the paired nulls."""
        lines = [f"{'point':<14} {'n':>3} {'inside':>6} {'coverage':>8} {'wilson 95%':>13} "
                 f"{'':>5}  {'band':>19} {'timing-only':>11}  paired null"]  # fmt: skip
        for p in self.points:
            lo, hi = wilson(p.inside, p.n)
            share = f"{p.inside / p.n:.0%}" if p.n else "-"
            timing = f"{p.timing_inside / p.n:.0%}" if p.n else "-"
            null = "-"
            if p.paired is not None:
                r = p.paired.ratio
                null = (f"x{r.value:.3f} [{r.low:.3f}–{r.high:.3f}] "
                        f"{'holds' if p.paired.holds else 'MISSES'}")  # fmt: skip
            lines.append(
                f"{p.text_type + '@' + str(p.prompt):<14} {p.n:>3} {p.inside:>6} {share:>8} "
                f"{lo:>6.0%}–{hi:<6.0%} {p.verdict:>5}  {p.band.low:>8.1f}–{p.band.high:<9.1f}"
                f" {timing:>11}  {null}"
            )  # fmt: skip
        lo, hi = wilson(self.inside, self.n)
        share = self.inside / self.n if self.n else 0.0
        lines.append(
            f"{'all points':<14} {self.n:>3} {self.inside:>6} {share:>8.1%} {lo:>6.1%}–"
            f"{hi:<6.1%} {judge(self.inside, self.n):>5}  (target {TARGET[0]:.0%}–"
            f"{TARGET[1]:.0%}; timing-only bands held "
            f"{self.timing_inside / self.n if self.n else 0:.1%})"
        )  # fmt: skip
        nulls = self.nulls
        if nulls:
            lines.append(f"paired nulls: {sum(nulls)} of {len(nulls)} hold no change")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "points": [p.as_dict() for p in self.points],
            "overall": {"n": self.n, "inside": self.inside,
                        "coverage": self.inside / self.n if self.n else None,
                        "wilson_95": list(wilson(self.inside, self.n)),
                        "verdict": judge(self.inside, self.n),
                        "timing_only_inside": self.timing_inside, "target": list(TARGET)},
            "paired_nulls": {"holds": sum(self.nulls), "of": len(self.nulls)},
            "params": self.params, "seconds": self.seconds, "timings": self.timings,
        }  # fmt: skip


def held_out_windows(count: int, start: int = MODEL_PASSAGES) -> list[int]:
    """The passage windows the held-out block reads: distinct, none of the sweep's."""
    if count < 1:
        raise MeasureError(f"A coverage point needs at least one held-out request, not {count}.")
    if start + count > WINDOWS:
        raise MeasureError(
            f"The prompt library has {WINDOWS - start} passages a point the sweep never "
            f"reads; ask for at most that many held-out requests, not {count}."
        )
    return list(range(start, start + count))


async def _read(
    session: MeasureSession, method: str, points: Sequence[tuple[str, int]],
    windows: Sequence[int], output: int, tick: Callable[[], None],
) -> list[RequestSample]:  # fmt: skip
    """Every point once per window, round by round (all points at window i, then i+1)."""
    params = {"points": [list(p) for p in points], "windows": list(windows), "output": output}
    async with session.run(method, params) as record:
        for index in windows:
            for kind, context in points:
                spec = await session.spec(kind, context, output, index=index)
                await session.measure(spec, record)
                tick()
    return list(record.samples)


async def run_coverage(
    session: MeasureSession,
    *,
    contexts: Sequence[int] = CONTEXTS,
    text_types: Sequence[str] = TEXT_TYPES,
    held_out: int = HELD_OUT,
    output_tokens: int = OUTPUT,
    reread: bool = True,
    seed: int = 0,
    tick: Tick | None = None,
) -> CoverageResult:
    """The three blocks (see the module docstring) and their score."""
    windows = held_out_windows(held_out)
    facts = await session.facts()
    for context in contexts:
        session.check_fits(facts, context, output_tokens)
    started = time.monotonic()
    timings: dict[str, float] = {}
    points = [(kind, c) for c in contexts for kind in text_types]
    total = len(points) * (held_out + (MODEL_PASSAGES if reread else 0))
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if tick:
            tick(done, total)

    kept, session.store = session.store, None  # a benchmark's sweep is not history
    try:
        t = time.monotonic()
        sweep = await methods.context_sweep(
            session, contexts=list(contexts), output_tokens=output_tokens,
            text_types=list(text_types), target=model_sweep_rule(None, None),
        )  # fmt: skip
        timings["sweep"] = time.monotonic() - t
        t = time.monotonic()
        held = await _read(session, "coverage-held-out", points, windows, output_tokens, step)
        timings["held out"] = time.monotonic() - t
        again: list[RequestSample] = []
        if reread:
            t = time.monotonic()
            again = await _read(session, "coverage-reread", points, range(MODEL_PASSAGES),
                                output_tokens, step)  # fmt: skip
            timings["re-read"] = time.monotonic() - t
    finally:
        session.store = kept
    scored = score(sweep.samples, held, again, seed=seed)
    params = {"contexts": list(contexts), "text_types": list(text_types),
              "held_out": held_out, "windows": [windows[0], windows[-1]],
              "sweep_passages": MODEL_PASSAGES, "output_tokens": output_tokens,
              "sweep_requests": len(sweep.samples), "seed": seed}  # fmt: skip
    return CoverageResult(scored, params, time.monotonic() - started, timings)
