"""Coverage of the verdict's prediction intervals, scored on passages a sweep never read.

The verdict reads a typed figure against the model's prediction at its point, with an
interval that holds the spread between passages of its text (`passage_spread`) and the
host's timing noise for one request (`typed_noise.noise_at`). Whether that interval is
honest is a measurable question: measure requests on passages the sweep never read, one
request a passage, and count how many land inside. A 95% interval should hold 92-98% of
them; fewer says the intervals are too narrow (the verdict will cry "not physics" on
physics), more that they are too wide (it will say "not enough evidence" for nothing).

What is scored here, per sweep point (text type, prompt length):

- the band: the model's predicted tok/s at the point's mid-decode context times one draw
  of the passage shift for a figure on one unseen passage (`PassageSpread.draw`, the
  draw `prediction_band` simulates) times one draw of one request's timing noise
  (`FigureNoise.draw`), both drawn together `DRAWS` times, seeded; its middle `LEVEL`;
- coverage: the share of held-out requests inside, with its Wilson 95% interval;
- "ok" when that Wilson interval meets the target band `TARGET` (the share could be in
  92-98% given so many requests), "under" when it lies wholly below (too narrow),
  "over" when wholly above (too wide). With 20 requests a point the Wilson interval is
  some 15 points wide, so "ok" at one point is a weak claim; the overall line pools every
  point and is the sharp one;
- beside it, the same count for a timing-only band (no passage term): the share the
  verdict's intervals held before passages were a random effect, so a reader sees how
  much the passage term does;
- the paired null where given: the sweep's own passages read once more, compared with
  the sweep's figure at the point under the comparison protocol (`pairing`: paired by
  passage, 99% per row, no drift term: the re-read follows within minutes). The engine
  did not change, so the interval of the change should hold "no change".

Pure: the samples come in, the report goes out.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from console.analysis.decompose import ThroughputModel, fit
from console.analysis.intervals import Interval, percentile, pool, usable
from console.analysis.noise_profile import Drift
from console.analysis.pairing import CHANGE_LEVEL, paired_figures
from console.analysis.passage_spread import PassageSpread, passage_spread
from console.analysis.records import RequestSample
from console.analysis.thresholds import LEVEL
from console.analysis.typed_noise import FigureNoise, NoiseProfile, noise_at
from console.analysis.verdict import Observed, Sweep, judge

TARGET = (0.92, 0.98)  # the share of held-out figures a 95% interval should hold
DRAWS = 4000
Z95 = 1.959964


def wilson(inside: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share `inside / n` (honest at 0 and n, where the
    normal interval collapses to a point)."""
    if n == 0:
        return 0.0, 1.0
    p = inside / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def judge_share(inside: int, n: int) -> str:
    """'ok', 'under' (too narrow) or 'over' (too wide): where the Wilson interval of the
    share sits against `TARGET`; '-' with nothing to count."""
    if n == 0:
        return "-"
    lo, hi = wilson(inside, n)
    if hi < TARGET[0]:
        return "under"
    if lo > TARGET[1]:
        return "over"
    return "ok"


@dataclass(frozen=True)
class Band:
    """One point's prediction interval for a figure of one request on an unseen passage."""

    point: float  # the model's predicted tok/s
    low: float
    high: float
    passages: PassageSpread | None  # None: timing only
    noise: FigureNoise | None

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    @property
    def width(self) -> float:
        """The interval's width over the prediction: 0.6 reads "60% wide"."""
        return (self.high - self.low) / self.point

    def as_dict(self) -> dict[str, Any]:
        return {"predicted": self.point, "low": self.low, "high": self.high,
                "width": self.width,
                "passages": self.passages.as_dict() if self.passages else None,
                "noise_sigma": self.noise.sigma if self.noise else None}  # fmt: skip


def band(
    model: ThroughputModel, sweep: Sequence[RequestSample], text_type: str, context: float,
    *, passages: bool = True, level: float = LEVEL, draws: int = DRAWS, seed: int = 0,
    profile: NoiseProfile | None = None,
) -> Band:  # fmt: skip
    """The `level` band at mid-decode `context` from the sweep alone, as the verdict
    builds a held-out typed figure's: the timing noise its own (`noise_at`), the passage
    spread net of it (`passage_spread(..., timing)`); `passages=False` leaves the passage
    term out; `profile`: the host's calibration, whose noise and drift then replace the
    sweep's own (as the verdict reads a typed figure on a calibrated host)."""
    point = model.predict(context, text_type)
    noise = noise_at(sweep, text_type, context, profile=profile)
    timing = noise.sigma if noise is not None else 0.0
    spread = passage_spread(sweep, text_type, timing) if passages else None
    rng = random.Random(seed)
    ratios = []
    for _ in range(draws):
        shift = spread.draw(rng, 1) if spread is not None else 0.0
        ratios.append(math.exp(shift) * (noise.draw(rng, 1) if noise is not None else 1.0))
    tail = (1 - level) / 2
    lo, hi = percentile(ratios, tail), percentile(ratios, 1 - tail)
    return Band(point, point * lo, point * hi, spread, noise)


@dataclass(frozen=True)
class PairedNull:
    """The sweep's passages read again at a point: the tok/s change against the sweep's
    figure under the comparison protocol, and whether its interval holds no change."""

    ratio: Interval
    pairs: int

    @property
    def holds(self) -> bool:
        return self.ratio.contains(1.0)

    def as_dict(self) -> dict[str, Any]:
        return {"ratio": self.ratio.as_dict(), "pairs": self.pairs, "holds": self.holds,
                "level": CHANGE_LEVEL}  # fmt: skip


@dataclass(frozen=True)
class PointCoverage:
    text_type: str
    prompt: int
    context: float  # mid-decode
    figures: tuple[float, ...]  # the held-out requests' tok/s
    band: Band
    timing_band: Band
    paired: PairedNull | None = None
    # The verdict's own answer on each held-out figure typed against the model (no
    # baseline): True where its 95% residual interval holds no change, None where it
    # gave no interval (a refusal).
    verdict_holds: tuple[bool | None, ...] = ()

    @property
    def n(self) -> int:
        return len(self.figures)

    @property
    def inside(self) -> int:
        return sum(self.band.contains(x) for x in self.figures)

    @property
    def timing_inside(self) -> int:
        return sum(self.timing_band.contains(x) for x in self.figures)

    @property
    def verdict(self) -> str:
        """How the verdict's own intervals did here (the band's where it was not asked)."""
        if self.verdict_holds:
            return judge_share(self.verdict_inside, self.verdict_n)
        return judge_share(self.inside, self.n)

    @property
    def verdict_n(self) -> int:
        return sum(h is not None for h in self.verdict_holds)

    @property
    def verdict_inside(self) -> int:
        return sum(h is True for h in self.verdict_holds)

    def as_dict(self) -> dict[str, Any]:
        return {"text_type": self.text_type, "prompt": self.prompt, "context": self.context,
                "n": self.n, "inside": self.inside, "coverage": _share(self.inside, self.n),
                "wilson_95": list(wilson(self.inside, self.n)), "verdict": self.verdict,
                "verdict_interval": {"n": self.verdict_n, "inside": self.verdict_inside,
                                     "coverage": _share(self.verdict_inside, self.verdict_n),
                                     "refused": len(self.verdict_holds) - self.verdict_n},
                "band": self.band.as_dict(), "timing_only": {
                    "inside": self.timing_inside, "band": self.timing_band.as_dict()},
                "figures": list(self.figures),
                "paired_null": self.paired.as_dict() if self.paired else None}  # fmt: skip


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def _figure(s: RequestSample) -> float:
    return s.decode_tok_s or pool([s]).tok_s


def _points(samples: Sequence[RequestSample]) -> dict[tuple[str, int], list[RequestSample]]:
    out: dict[tuple[str, int], list[RequestSample]] = {}
    for s in usable(samples):
        if s.decode_context is not None:
            out.setdefault((s.text_type, s.context_tokens), []).append(s)
    return out


def _paired(
    before: Sequence[RequestSample], after: Sequence[RequestSample], drift: Drift | None
) -> PairedNull | None:
    figures = paired_figures(before, after, drift=drift) if after else None
    if figures is None:
        return None
    moved = figures.figure("decode_tok_s").moved
    return PairedNull(moved.ratio, getattr(moved, "pairs", 0))


def _verdict_holds(sweep: Sweep, s: RequestSample, seed: int) -> bool | None:
    """The verdict on one held-out figure typed as the operator would (one request, its
    prompt and output, the operator's own passage) against the model alone: does its
    residual interval hold no change? None where it gave no interval."""
    typed = Observed.typed_at(_figure(s), s.context_tokens, s.text_type, output=s.max_tokens,
                              requests=1)  # fmt: skip
    residual = judge(sweep, typed, seed=seed).factor("residual")
    if residual is None or residual.zero_width:
        return None
    return residual.ratio.contains(1.0)


def score(
    sweep: Sequence[RequestSample], held_out: Sequence[RequestSample],
    reread: Sequence[RequestSample] = (), *, noise: NoiseProfile | None = None,
    drift: Drift | None = None, verdict: bool = True, draws: int = DRAWS, seed: int = 0,
) -> list[PointCoverage]:  # fmt: skip
    """Every sweep point's coverage by its held-out requests (and its paired null where
    `reread` has the sweep's passages again), in the sweep's order of points. `noise`:
    the host's calibration (typed figures carry it, and its drift, as `diagnose` reads
    them); `drift`: the block-to-block term of the paired re-read (an A-B); `verdict`:
    also ask the verdict itself about every held-out figure (some 60 ms each)."""
    model = fit(sweep)
    typed_sweep = Sweep(tuple(sweep), source="the coverage sweep", noise_profile=noise)
    swept, held, again = _points(sweep), _points(held_out), _points(reread)
    out = []
    for key in sorted(swept, key=lambda k: (k[1], k[0])):
        kind, prompt = key
        context = float(swept[key][0].decode_context or prompt)
        out.append(PointCoverage(
            kind, prompt, context, tuple(_figure(s) for s in held.get(key, ())),
            band(model, sweep, kind, context, draws=draws, seed=seed, profile=noise),
            band(model, sweep, kind, context, passages=False, draws=draws, seed=seed,
                 profile=noise),
            _paired(swept[key], again.get(key, ()), drift),
            tuple(_verdict_holds(typed_sweep, s, seed) for s in held.get(key, ()))
            if verdict else (),
        ))  # fmt: skip
    return out
