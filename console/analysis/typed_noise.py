"""How noisy a typed figure is on this host: the per-request spread at its point.

"It was 138, now it is 32" comes with no samples: each number is one request, or the
median of a few, that the operator read somewhere. Taken at face value it has no
interval, and two typed figures of the same engine then differ "significantly" by
whatever this host's request-to-request spread happened to give them (the same engine
twice, medians of three requests: +37%, "worth a bug hunt"). So a typed figure carries
the noise this host measured at its point:

- a calibration profile (`specconsole calibrate HOST`, stored per host and flags), when
  one is given: its request-to-request spread at the calibrated point nearest the
  figure, and its block-to-block drift (a typed baseline was measured at another time);
- else the stored sweep's own requests at the point nearest the figure (same text type
  first): each request's tok/s over its point's pooled tok/s.

The noise is the spread of log tok/s with its degrees of freedom; a bootstrap draw of a
typed figure divides it by a draw of that spread (the median of `k` draws for a figure
typed as the median of `k` requests), the spread itself drawn from its own uncertainty.
Pure: the profile is read elsewhere (`experiments/typed_noise_source.py`) and passed in.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from console.analysis.intervals import percentile, usable
from console.analysis.noise_profile import Z95
from console.analysis.records import RequestSample

MIN_REQUESTS = 2  # a point with fewer requests has no spread to speak of


@dataclass(frozen=True)
class FigureNoise:
    """The request-to-request spread of tok/s at one point: the standard deviation of log
    tok/s (`sigma`) with its degrees of freedom (`df`, requests less one per point it
    pools).

    A handful of requests under-states a spread (four requests of a ± 24% host can read
    ± 7%), so a draw first draws sigma from its own uncertainty (sigma^2 df / chi2_df),
    then the request: one request of a typed figure is then Student-t about its point,
    as wide as so few requests honestly allow, and narrower the more the sweep or the
    calibration measured."""

    sigma: float
    df: int
    text_type: str
    context: float  # the mid-decode context of the point it was measured at
    source: str  # "sweep run 12", "calibration of gpu1"
    drift: float = 0.0  # block-to-block shift allowed on top (a calibration's restart term)
    n: int = 0  # requests it rests on
    pooled: str = ""  # which points it pools, when more than the nearest

    def draw(self, rng: random.Random, k: int = 1) -> float:
        """One bootstrap ratio (figure / its point) for a figure that is the median of `k`
        requests.

        The drift is the 95% half-width of the shift between two blocks (a calibration's
        `Z95 x shift_sd`). Both figures of a comparison draw it, so each draws its share,
        a normal shift of sd `shift_sd / sqrt 2`: their ratio then carries the measured
        block-to-block shift once, not twice."""
        sigma = self.sigma * math.sqrt(self.df / rng.gammavariate(self.df / 2, 2.0))
        log = statistics.median(rng.gauss(0.0, sigma) for _ in range(max(1, k)))
        if self.drift:
            log += rng.gauss(0.0, self.drift / Z95 / math.sqrt(2.0))
        return math.exp(log)

    def band(self) -> tuple[float, float]:
        """The middle 95% of one request's tok/s relative to its point's (seeded)."""
        rng = random.Random(0)
        draws = [self.draw(rng) for _ in range(2000)]
        return percentile(draws, 0.025), percentile(draws, 0.975)

    def text(self) -> str:
        lo, hi = self.band()
        drift = f", drift ± {self.drift:.0%} between blocks included" if self.drift else ""
        where = self.pooled or f"{self.text_type} at context {self.context:.0f}"
        return (
            f"one request reads {lo - 1:+.0%} to {hi - 1:+.0%} of its point here "
            f"({self.n} requests of {where}, {self.source}{drift})"
        )

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.band()
        return {"text_type": self.text_type, "context": self.context, "n": self.n,
                "sigma": self.sigma, "df": self.df, "low": lo, "high": hi,
                "drift": self.drift, "source": self.source, "pooled": self.pooled}  # fmt: skip


def _log_deviations(tok_s: Sequence[float]) -> list[float]:
    logs = [math.log(t) for t in tok_s if t > 0]
    mean = statistics.fmean(logs)
    return [x - mean for x in logs]


def spread_of(
    text_type: str, context: float, tok_s: Sequence[float], source: str, drift: float = 0.0
) -> FigureNoise | None:
    """One point's noise from its requests' tok/s; None under `MIN_REQUESTS`."""
    if len([t for t in tok_s if t > 0]) < MIN_REQUESTS:
        return None
    dev = _log_deviations(tok_s)
    df = len(dev) - 1
    sigma = math.sqrt(sum(d * d for d in dev) / df)
    return FigureNoise(sigma, df, text_type, context, source, drift, len(dev))


def _pool_points(points: Sequence[FigureNoise], text_type: str) -> FigureNoise | None:
    """Every point of a text type as one relative spread (sum of squares over the sum of
    their degrees of freedom): timing noise is a share of the step, much the same at
    every context, and more degrees of freedom narrow it honestly."""
    same = [p for p in points if p.text_type == text_type and p.df > 0]
    if len(same) < 2:
        return None
    df = sum(p.df for p in same)
    sigma = math.sqrt(sum(p.sigma**2 * p.df for p in same) / df)
    head = same[0]
    where = f"{text_type} at {len(same)} points"
    return FigureNoise(sigma, df, text_type, head.context, head.source, head.drift,
                       sum(p.n for p in same), where)  # fmt: skip


@dataclass(frozen=True)
class NoiseProfile:
    """A host's calibrated noise: the spread at a few points and the drift across a
    restart with unchanged flags (what `specconsole calibrate` measures).

    `from_dict` reads the shape a store hands over:
    {"source": str, "drift": float, "points": [{"text_type", "context", "ratios"}]}, where
    `ratios` are the calibration requests' tok/s (or their ratios to the point: only
    their spread counts)."""

    points: tuple[FigureNoise, ...]
    source: str
    drift: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NoiseProfile:
        source = str(data.get("source") or "calibration")
        drift = float(data.get("drift") or 0.0)
        points = []
        for p in data.get("points", ()):
            noise = spread_of(str(p["text_type"]), float(p["context"]),
                              [float(r) for r in p.get("ratios", ())], source, drift)  # fmt: skip
            if noise is not None:
                points.append(noise)
        return cls(tuple(points), source, drift)


def _distance(a: float, b: float) -> float:
    return abs(math.log(max(a, 1.0) / max(b, 1.0)))


def _nearest(points: Sequence[FigureNoise], text_type: str, context: float) -> FigureNoise | None:
    """The same text type's nearest point, else any text's nearest. Where the text has
    several points, the spread is the wider of the nearest point's and all its points'
    pooled, on the pooled degrees of freedom: a few requests at one point cannot say
    much about its spread, and the spread never comes out narrower than the point shows."""
    same = [p for p in points if p.text_type == text_type]
    candidates = same or list(points)
    if not candidates:
        return None
    nearest = min(candidates, key=lambda p: _distance(p.context, context))
    pooled = _pool_points(points, nearest.text_type)
    if pooled is None:
        return nearest
    where = (f"{nearest.text_type} at context {nearest.context:.0f}, its spread or that of "
             f"{pooled.pooled} if wider")  # fmt: skip
    return replace(pooled, sigma=max(nearest.sigma, pooled.sigma), context=nearest.context,
                   pooled=where)  # fmt: skip


def _within_passages(
    kind: str, ctx: float, group: Sequence[RequestSample], source: str
) -> FigureNoise | None:
    """The point's timing spread: each request's log tok/s about its own passage's mean,
    on n - passages degrees of freedom; None when no passage was read twice."""
    by_passage: dict[str, list[float]] = {}
    for s in group:
        by_passage.setdefault(s.prompt_id, []).append(_rate(s))
    repeated = [r for r in by_passage.values() if len([t for t in r if t > 0]) >= MIN_REQUESTS]
    if not repeated:
        return None
    dev = [d for rates in repeated for d in _log_deviations(rates)]
    df = len(dev) - len(repeated)
    sigma = math.sqrt(sum(d * d for d in dev) / df)
    where = f"{source}, about each passage's own mean: figures of the same prompts"
    return FigureNoise(sigma, df, kind, ctx, where, 0.0, len(dev))


def _rate(s: RequestSample) -> float:
    return (s.completion_tokens - 1) / (s.decode_time_s or 1.0)


def sweep_noise(samples: Sequence[RequestSample], source: str) -> list[FigureNoise]:
    """Every sweep point with at least `MIN_REQUESTS` usable requests, as its noise.

    Where the sweep read a passage more than once at a point, the noise is the spread
    about each passage's own mean: timing noise, what two figures of the console's own
    prompts (the same passages, as `prompt` and `sweep` read them) differ by. Passage
    mix is not noise between such figures, and counted in it made a 25% step-time
    regression unreadable (± 40% on a median of ten requests). A sweep of distinct
    passages only gives the whole spread, passages included."""
    groups: dict[tuple[str, float], list[RequestSample]] = {}
    for s in usable(samples):
        if s.decode_context is not None:
            groups.setdefault((s.text_type, round(s.decode_context)), []).append(s)
    out = []
    for (kind, ctx), group in sorted(groups.items()):
        noise = _within_passages(kind, float(ctx), group, source) or spread_of(
            kind, float(ctx), [_rate(s) for s in group], source)  # fmt: skip
        if noise is not None:
            out.append(noise)
    return out


def noise_at(
    samples: Sequence[RequestSample],
    text_type: str,
    context: float,
    *,
    source: str = "the stored sweep",
    profile: NoiseProfile | None = None,
) -> FigureNoise | None:
    """The noise of a typed figure of `text_type` at mid-decode `context`: the
    calibration profile's nearest point, else the sweep's; None when neither has one
    (then the figure has no interval and the verdict says so)."""
    if profile is not None and profile.points:
        return _nearest(profile.points, text_type, context)
    return _nearest(sweep_noise(samples, source), text_type, context)
