"""Do the verdict's intervals hold on passages the sweep never read? (`bench coverage`)

A run is three blocks on the engine as it stands, stored nowhere (a benchmark's sweep
must not become the latest sweep a later `diagnose` explains with), after calibrating
the host as `bench verdict` does (typed figures and A-B comparisons carry its noise and
drift on a calibrated host):

1. the model sweep as `specconsole sweep` takes it by default (`model_sweep_rule`:
   `MODEL_PASSAGES` passages a point, in rounds until narrow);
2. the held-out block: at every point of the sweep, `held_out` requests, one a passage,
   on passage windows the sweep never read (from `MODEL_PASSAGES` on), interleaved over
   the points round by round so drift spreads over all of them;
3. the re-read: the sweep's own passages once more at every point, for the paired null
   (the engine did not change: the comparison's interval should hold "no change").

`analysis.coverage.score` then asks the verdict about every held-out figure, typed as
`diagnose --observed` takes it, and counts, per point, how often its 95% residual
interval holds no change; beside it, how many the point's simulated 95% band holds (the
passage term and one request's timing noise), and the same for a timing-only band, so
the table shows what the passage term does. Pure scoring lives there; this module only measures.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.analysis.coverage import TARGET, PointCoverage, judge_share, score, wilson
from console.analysis.records import RequestSample
from console.analysis.repeat_rule import MODEL_PASSAGES, model_sweep_rule
from console.experiments.typed_noise_source import from_calibration
from console.experiments.verdict_paths import bench_calibration
from console.measure import methods
from console.measure.prompts import WINDOWS
from console.measure.session import MeasureError, MeasureSession
from console.store import RunStore

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

    def _sum(self, name: str) -> int:
        return sum(getattr(p, name) for p in self.points)

    @property
    def n(self) -> int:
        """Held-out figures measured, over every point."""
        return self._sum("n")

    @property
    def nulls(self) -> list[bool]:
        return [p.paired.holds for p in self.points if p.paired is not None]

    def table(self) -> list[str]:
        """One line a point (the verdict's own 95% interval first, then the simulated
        band and a timing-only band on the same figures), the pooled line, the nulls."""
        lines = [f"{'point':<13} {'n':>3} {'verdict':>7} {'wilson 95%':>12} {'':>5} "
                 f"{'band':>5} {'timing':>6}  {'band (tok/s)':>17}  paired null"]  # fmt: skip
        for p in self.points:
            lo, hi = wilson(p.verdict_inside, p.verdict_n)
            null = "-"
            if p.paired is not None:
                r = p.paired.ratio
                null = (f"x{r.value:.3f} [{r.low:.3f}–{r.high:.3f}] "
                        f"{'holds' if p.paired.holds else 'MISSES'}")  # fmt: skip
            lines.append(
                f"{p.text_type + '@' + str(p.prompt):<13} {p.n:>3} "
                f"{_pct(p.verdict_inside, p.verdict_n):>7} {lo:>5.0%}–{hi:<6.0%} "
                f"{p.verdict:>5} {_pct(p.inside, p.n):>5} {_pct(p.timing_inside, p.n):>6}  "
                f"{p.band.low:>7.0f}–{p.band.high:<9.0f}  {null}"
            )  # fmt: skip
        inside, n = self._sum("verdict_inside"), self._sum("verdict_n")
        lo, hi = wilson(inside, n)
        lines.append(
            f"{'all points':<13} {n:>3} {_pct(inside, n, 1):>7} {lo:>5.1%}–{hi:<6.1%} "
            f"{judge_share(inside, n):>5} {_pct(self._sum('inside'), self._sum('n')):>5} "
            f"{_pct(self._sum('timing_inside'), self._sum('n')):>6}  (target "
            f"{TARGET[0]:.0%}–{TARGET[1]:.0%})"
        )  # fmt: skip
        refused = self._sum("n") - n
        if refused:
            lines.append(f"the verdict gave no interval for {refused} figure(s)")
        nulls = self.nulls
        if nulls:
            lines.append(f"paired re-reads of the sweep's passages: {sum(nulls)} of "
                         f"{len(nulls)} hold no change (99%, with the host's drift)")  # fmt: skip
        return lines

    def as_dict(self) -> dict[str, Any]:
        inside, n = self._sum("verdict_inside"), self._sum("verdict_n")
        return {
            "points": [p.as_dict() for p in self.points],
            "overall": {"n": n, "inside": inside, "coverage": inside / n if n else None,
                        "wilson_95": list(wilson(inside, n)),
                        "verdict": judge_share(inside, n), "target": list(TARGET),
                        "band_inside": self._sum("inside"), "figures": self._sum("n"),
                        "timing_only_inside": self._sum("timing_inside")},
            "paired_nulls": {"holds": sum(self.nulls), "of": len(self.nulls)},
            "params": self.params, "seconds": self.seconds, "timings": self.timings,
        }  # fmt: skip


def _pct(k: int, n: int, digits: int = 0) -> str:
    return f"{k / n:.{digits}%}" if n else "-"


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
    calibrate: bool = True,
    timeout: float = 600.0,
    seed: int = 0,
    tick: Tick | None = None,
) -> CoverageResult:
    """The host's calibration (unless not `calibrate`: its noise and drift are what a
    typed figure and an A-B carry on a calibrated host), then the three blocks (see the
    module docstring) and their score."""
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

    calibration = None
    if calibrate:  # into a store of its own: the operator's history is not touched
        t = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="specconsole-coverage-") as tmp:
            store = RunStore(Path(tmp) / "calibration.sqlite")
            try:
                calibration = await bench_calibration(
                    session, store, contexts=list(contexts), output=output_tokens,
                    kinds=list(text_types), timeout=timeout)  # fmt: skip
            finally:
                store.close()
        timings["calibration (restarts included)"] = time.monotonic() - t
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
    noise = from_calibration(calibration) if calibration is not None else None
    drift = calibration.drift("A-B") if calibration is not None else None
    scored = score(sweep.samples, held, again, noise=noise, drift=drift, seed=seed)
    params = {"contexts": list(contexts), "text_types": list(text_types),
              "held_out": held_out, "windows": [windows[0], windows[-1]],
              "sweep_passages": MODEL_PASSAGES, "output_tokens": output_tokens,
              "sweep_requests": len(sweep.samples), "seed": seed,
              "calibration": calibration.as_dict() if calibration else None}  # fmt: skip
    return CoverageResult(scored, params, time.monotonic() - started, timings)
