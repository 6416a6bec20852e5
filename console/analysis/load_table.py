"""The load table's arithmetic: per concurrency, each arm's per-stream and aggregate
tok/s, commit and step time with intervals, the speedup of speculation over plain
decoding, and the concurrency at which speculation stops paying.

Speculation's gain shrinks with the batch: each sequence's draft block or tree multiplies
the rows of every verify forward, so once the engine is compute-bound a round costs more
than the tokens it commits save. The speedup at concurrency N is the speculative arm's
per-stream tok/s over the plain arm's at the same N (equal to the ratio of their
aggregates, every stream reading the same text).

A level is measured in waves: N requests sent together, one per stream, all the same
context, text and output length (fixed length, so they finish together and the batch
stays N through the wave). The requests of one wave share their batch and its slow
moments, so the bootstrap resamples whole waves within each arm and level, never single
requests. Per-stream figures are pooled over a level's requests (decode tokens / verify
steps / decode time); the aggregate is each wave's output tokens over its wall time
(first request sent to last reply, prefill included), pooled over waves.

The two arms run in different blocks (speculation off needs a restart), so the speedup's
interval also carries the host's measured drift between blocks where one is stored
(`specconsole calibrate`), as every comparison across a restart does: each resample
shifts the plain arm by one draw of the drift, the same draw at every level (each arm is
one block), so the crossing's interval carries it too.

Pure (no engine): `experiments/load.py` measures and calls it; the history recomputes a
stored run's table from its samples with it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.intervals import LEVEL, RESAMPLES, Interval, percentile
from console.analysis.records import RequestSample
from console.errors import ConsoleError

Wave = list[RequestSample]


class LoadError(ConsoleError):
    """A level whose arm has no usable request."""


def _usable(
    samples: Sequence[RequestSample], counted: WaveCounters | None = None
) -> list[RequestSample]:
    """Unflagged requests with a decode time: their own, or their wave's as the counters
    summed it (a vLLM stream under load can arrive in one burst, leaving none of its own)."""
    waves = counted.decode_s if counted is not None else {}
    return [s for s in samples if s.ok and s.completion_tokens > 1
            and (s.decode_time_s or (s.wave is not None and s.wave in waves))]  # fmt: skip


def waves_of(samples: Sequence[RequestSample]) -> list[Wave]:
    """A level's requests grouped by the wave they were sent in (alone: one a wave)."""
    groups: dict[Any, Wave] = {}
    for i, s in enumerate(samples):
        groups.setdefault(s.wave if s.wave is not None else ("alone", i), []).append(s)
    return list(groups.values())


@dataclass(frozen=True)
class Pooled:
    """One arm at one concurrency, pooled over a set of waves."""

    tokens: float  # decode tokens
    seconds: float  # decode time, summed over streams
    steps: float | None  # verify steps (None: the engine counted none, plain decoding)
    output_tokens: float
    wall_s: float  # the waves' wall time, summed

    @property
    def stream_tok_s(self) -> float:
        return self.tokens / self.seconds

    @property
    def aggregate_tok_s(self) -> float:
        return self.output_tokens / self.wall_s

    @property
    def commit(self) -> float | None:
        return self.tokens / self.steps if self.steps else None

    @property
    def step_s(self) -> float:
        """Decode time per verify step; plain decoding's step is one token."""
        return self.seconds / (self.steps or self.tokens)


def wave_wall_s(wave: Wave) -> float:
    """First request sent to last reply: `t` is when a reply was complete."""
    return max(s.t for s in wave) - min(s.t - s.latency_s for s in wave)


@dataclass(frozen=True)
class WaveCounters:
    """What the engine's counters counted around each wave (by wave id), where the
    replies cannot say it under load (vLLM): its requests' verify steps, and their
    decode time summed (the decode-time histogram's sum: server-side, where a stream's
    bursts under load make the client's clock wrong)."""

    steps: dict[int, float] = field(default_factory=dict)
    decode_s: dict[int, float] = field(default_factory=dict)

    @classmethod
    def from_summary(cls, summary: dict[str, Any]) -> WaveCounters:
        def read(key: str) -> dict[int, float]:
            return {int(k): float(v) for k, v in (summary.get(key) or {}).items()}

        return cls(read("wave_steps"), read("wave_decode_s"))

    def as_summary(self) -> dict[str, dict[str, float]]:
        return {"wave_steps": {str(k): v for k, v in self.steps.items()},
                "wave_decode_s": {str(k): v for k, v in self.decode_s.items()}}  # fmt: skip


NO_COUNTERS = WaveCounters()


def _wave_steps(wave: Wave, counted: WaveCounters) -> float | None:
    """The wave's verify steps: its replies' own, else the engine's counters around it."""
    if all(s.verify_steps for s in wave):
        return float(sum(s.verify_steps or 0 for s in wave))
    return counted.steps.get(wave[0].wave) if wave[0].wave is not None else None


def _wave_seconds(wave: Wave, counted: WaveCounters) -> float:
    """The wave's decode time summed over its requests: the counters' where they counted
    it, else each reply's own."""
    if wave[0].wave is not None and wave[0].wave in counted.decode_s:
        return counted.decode_s[wave[0].wave]
    return sum(s.decode_time_s or 0.0 for s in wave)


def pool(waves: Sequence[Wave], counted: WaveCounters = NO_COUNTERS) -> Pooled:
    samples = [s for w in waves for s in w]
    steps = [_wave_steps(w, counted) for w in waves]
    return Pooled(
        tokens=float(sum(s.completion_tokens - 1 for s in samples)),
        seconds=sum(_wave_seconds(w, counted) for w in waves),
        steps=None if None in steps else float(sum(steps)),  # type: ignore[arg-type]
        output_tokens=float(sum(s.completion_tokens for s in samples)),
        wall_s=sum(wave_wall_s(w) for w in waves),
    )


@dataclass(frozen=True)
class LoadLevel:
    """One arm at one concurrency: figures and their intervals over waves."""

    concurrency: int
    stream_tok_s: Interval
    aggregate_tok_s: Interval
    step_s: Interval
    commit: Interval | None
    requests: int
    waves: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "stream_tok_s": self.stream_tok_s.as_dict(),
            "aggregate_tok_s": self.aggregate_tok_s.as_dict(),
            "step_ms": self.step_s.scaled(1000.0).as_dict(),
            "commit": self.commit.as_dict() if self.commit else None,
            "requests": self.requests,
            "waves": self.waves,
        }


@dataclass(frozen=True)
class LoadRow:
    """One concurrency: both arms and the speedup, per stream, of speculation."""

    concurrency: int
    spec: LoadLevel
    ar: LoadLevel | None
    speedup: Interval | None  # spec / AR per-stream tok/s, drift included

    @property
    def pays(self) -> bool | None:
        """True when the speedup's interval lies above 1, False below, None when it holds
        1 (or a side has no spread to resample): no answer."""
        s = self.speedup
        if s is None or s.low == s.high:
            return None
        return True if s.low > 1.0 else False if s.high < 1.0 else None

    @property
    def pays_text(self) -> str:
        return {True: "yes", False: "no", None: "not sure"}[self.pays]

    def as_dict(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "spec": self.spec.as_dict(),
            "ar": self.ar.as_dict() if self.ar else None,
            "speedup": self.speedup.as_dict() if self.speedup else None,
            "pays": self.pays,
            "pays_text": self.pays_text,
        }


def _resampled(
    waves: Sequence[Wave], statistic: Callable[[Pooled], float | None], rng: random.Random,
    resamples: int, level: float, counted: WaveCounters,
) -> tuple[Interval, list[float]]:  # fmt: skip
    value = statistic(pool(waves, counted))
    assert value is not None
    draws = []
    for _ in range(resamples):
        drawn = [waves[rng.randrange(len(waves))] for _ in waves]
        x = statistic(pool(drawn, counted))
        if x is not None:
            draws.append(x)
    tail = (1 - level) / 2
    interval = Interval(value, percentile(draws, tail), percentile(draws, 1 - tail))
    return interval, draws


def load_level(
    concurrency: int, samples: Sequence[RequestSample], *, rng: random.Random,
    resamples: int = RESAMPLES, level: float = LEVEL, counted: WaveCounters = NO_COUNTERS,
) -> tuple[LoadLevel, list[float]]:  # fmt: skip
    """One arm's level and its per-stream tok/s draws (the speedup resamples with them)."""
    ok = _usable(samples, counted)
    if not ok:
        raise LoadError(
            f"No usable request at concurrency {concurrency} (each was flagged or had no "
            "decode time); see the stored samples."
        )
    waves = waves_of(ok)
    seed = rng.randrange(2**32)

    def run(statistic: Callable[[Pooled], float | None]) -> tuple[Interval, list[float]]:
        # One seed for every figure of the level: the same waves are drawn for each.
        return _resampled(waves, statistic, random.Random(seed), resamples, level, counted)

    stream, draws = run(lambda p: p.stream_tok_s)
    has_commit = pool(waves, counted).commit is not None
    return LoadLevel(
        concurrency=concurrency,
        stream_tok_s=stream,
        aggregate_tok_s=run(lambda p: p.aggregate_tok_s)[0],
        step_s=run(lambda p: p.step_s)[0],
        commit=run(lambda p: p.commit)[0] if has_commit else None,
        requests=len(ok),
        waves=len(waves),
    ), draws


def _ratio(spec: list[float], ar: list[float], value: float, shifts: Sequence[float],
           level: float) -> tuple[Interval, list[float]]:  # fmt: skip
    """spec / AR from independent draws of each arm, each draw shifted by the drift
    between the arms' blocks (`shifts`, log scale: one per draw, shared by every level,
    since each arm is one block); the log draws come back for the crossing."""
    n = min(len(spec), len(ar), len(shifts))
    logs = [math.log(spec[i] / ar[i]) + shifts[i] for i in range(n)]
    tail = (1 - level) / 2
    interval = Interval(value, math.exp(percentile(logs, tail)),
                        math.exp(percentile(logs, 1 - tail)))  # fmt: skip
    return interval, logs


@dataclass(frozen=True)
class LoadTable:
    rows: list[LoadRow]
    breakeven: BreakevenConcurrency | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.as_dict() for r in self.rows],
            "breakeven": self.breakeven.as_dict() if self.breakeven else None,
        }


@dataclass(frozen=True)
class BreakevenConcurrency:
    """Where the speedup crosses 1 (`crossing`) and its interval over the resamples. A
    bound of 0 is "at no level measured" (it does not pay from the first), None "beyond
    the last level" (it pays throughout); `value` is None when the point estimate is
    either of the two."""

    value: float | None
    low: float | None
    high: float | None
    pays_everywhere: bool  # the point estimate pays at every level
    levels: tuple[int, int]

    def text(self) -> str:
        first, last = self.levels

        def at(x: float | None) -> str:
            return f">{last}" if x is None else f"<{first}" if x < first else f"{x:.1f}"

        if self.value is not None:
            return (f"speculation stops paying at concurrency {self.value:.1f} "
                    f"[{at(self.low)}–{at(self.high)}]")  # fmt: skip
        if self.pays_everywhere:
            text = f"speculation pays at every level measured ({first} to {last})"
            return text if self.low is None else f"{text}; it may stop from {at(self.low)}"
        text = f"speculation pays at no level measured ({first} to {last})"
        return text if self.high is not None and self.high < first else (
            f"{text}; it may pay up to {at(self.high)}")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "pays_everywhere": self.pays_everywhere,
            "text": self.text(),
        }


def crossing(levels: Sequence[int], log_speedups: Sequence[float]) -> float:
    """The concurrency where speculation stops paying: after the first level where it
    pays (log speedup above 0), the first point where log speedup falls through 0, linear
    in log2 N between the levels around it. +inf when it pays from there on; 0 when it
    pays at no level."""
    first = next((i for i, y in enumerate(log_speedups) if y > 0), None)
    if first is None:
        return 0.0
    for i in range(first + 1, len(levels)):
        y0, y1 = log_speedups[i - 1], log_speedups[i]
        if y1 <= 0 < y0:
            x0, x1 = math.log2(levels[i - 1]), math.log2(levels[i])
            return 2 ** (x0 + (x1 - x0) * y0 / (y0 - y1))
    return math.inf


def breakeven_concurrency(
    levels: Sequence[int], values: Sequence[float], draws: Sequence[Sequence[float]],
    level: float = LEVEL,
) -> BreakevenConcurrency:  # fmt: skip
    """The crossing and its percentile interval over the speedups' joint draws."""
    point = crossing(levels, [math.log(v) for v in values])
    n = min(len(d) for d in draws)
    crossings = sorted(crossing(levels, [d[i] for d in draws]) for i in range(n))
    tail = (1 - level) / 2

    def bound(q: float) -> float | None:
        x = percentile([min(c, 1e9) for c in crossings], q)
        return None if x >= 1e9 else x

    span = (levels[0], levels[-1])
    inside = math.isfinite(point) and point > 0
    return BreakevenConcurrency(point if inside else None, bound(tail), bound(1 - tail),
                                math.isinf(point), span)  # fmt: skip


def load_table(
    samples: Sequence[RequestSample], *, spec_hash: str, ar_hash: str | None,
    counted: WaveCounters = NO_COUNTERS, drift_sd: float = 0.0, seed: int = 0,
    resamples: int = RESAMPLES, level: float = LEVEL,
) -> LoadTable:  # fmt: skip
    """The table from a run's samples (the arms told apart by their flags hash, so a
    stored run recomputes from its samples alone). `drift_sd`: the SD (log scale) of the
    host's shift between the arms' blocks, 0 where none is measured; `counted`: what the
    engine's counters counted around each wave where the replies cannot say (vLLM)."""
    rng = random.Random(seed)
    shifts = [rng.gauss(0.0, drift_sd) if drift_sd > 0 else 0.0 for _ in range(resamples)]
    rows, log_draws = [], []
    levels = sorted({s.concurrency for s in samples if s.flags_hash == spec_hash})
    for n in levels:
        at = [s for s in samples if s.concurrency == n]
        kw = {"rng": rng, "resamples": resamples, "level": level, "counted": counted}
        spec, spec_draws = load_level(n, [s for s in at if s.flags_hash == spec_hash], **kw)
        ar = speedup = None
        ar_samples = [s for s in at if ar_hash is not None and s.flags_hash == ar_hash]
        if ar_samples:
            ar, ar_draws = load_level(n, ar_samples, **kw)
            value = spec.stream_tok_s.value / ar.stream_tok_s.value
            speedup, logs = _ratio(spec_draws, ar_draws, value, shifts, level)
            log_draws.append(logs)
        rows.append(LoadRow(n, spec, ar, speedup))
    paired = [r for r in rows if r.speedup is not None]
    breakeven = None
    if paired and len(paired) == len(rows):
        breakeven = breakeven_concurrency(
            [r.concurrency for r in rows], [r.speedup.value for r in paired],  # type: ignore[union-attr]
            log_draws, level,
        )  # fmt: skip
    return LoadTable(rows, breakeven)
