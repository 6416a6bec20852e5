"""The load factor, and a typed question read through it: "alone it decoded 1836 tok/s;
under 4 streams each reads 582: bug, or physics?".

A batch's round costs more than one request's (every sequence's tree or block adds rows
to each verify forward), so one stream's tok/s falls as the concurrency rises. A stored
`load` run measured that fall on this host and flags: per-stream tok/s of the speculative
arm at each concurrency, in waves. The load factor from N0 to N is the ratio of the two
levels' per-stream rates (interpolated linearly in log N between measured levels, never
extrapolated past them), its interval from the run's own wave resamples.

A typed pair is then read as the model's verdict reads a context or text change:

    observed / baseline = load factor x residual

Each typed figure carries the request-to-request spread of its own level in the load
run (`typed_noise.FigureNoise`: requests there read different passages, so the spread
holds the passage term as well as timing), and the residual is judged by
`answer.answer`: its decision interval at `CHANGE_LEVEL`, the shown one at `LEVEL`.
Both figures are taken as measured at the load run's context and text; the verdict
says so, since the factor is measured there only.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from console.analysis import format as fmt
from console.analysis.answer import Outcome, answer
from console.analysis.intervals import RESAMPLES, Interval, percentile
from console.analysis.load_table import LoadError, load_level
from console.analysis.records import RequestSample
from console.analysis.thresholds import CHANGE_LEVEL, LEVEL
from console.analysis.typed_noise import FigureNoise, spread_of


def _stream_rate(s: RequestSample) -> float:
    return (s.completion_tokens - 1) / (s.decode_time_s or math.inf)


@dataclass(frozen=True)
class LoadFactor:
    """One stream's tok/s at `to_n` over its tok/s at `from_n`, from one load run."""

    from_n: int
    to_n: int
    ratio: Interval
    log_draws: tuple[float, ...]  # the ratio's resampled logs (the verdict redraws them)
    source: str  # "load run 12 (code at context 256)"

    def text(self) -> str:
        return (f"load: one stream at concurrency {self.from_n} -> {self.to_n}: tok/s "
                f"x{self.ratio.value:.2f} [{self.ratio.low:.2f}–{self.ratio.high:.2f}] "
                f"({self.source})")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {"from": self.from_n, "to": self.to_n, **self.ratio.as_dict(),
                "source": self.source}  # fmt: skip


def _at(levels: Sequence[int], draws: dict[int, list[float]], n: float, i: int) -> float:
    """Draw `i` of log per-stream tok/s at concurrency `n`, linear in log N between the
    measured levels around it."""
    if n in draws:
        return math.log(draws[int(n)][i])
    lo = max(m for m in levels if m < n)
    hi = min(m for m in levels if m > n)
    w = (math.log(n) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return (1 - w) * math.log(draws[lo][i]) + w * math.log(draws[hi][i])


def load_factor(
    samples: Sequence[RequestSample], *, spec_hash: str, from_n: int, to_n: int,
    source: str, seed: int = 0, resamples: int = RESAMPLES,
) -> LoadFactor:  # fmt: skip
    """The factor from the speculative arm's samples (`spec_hash`) of a load run; a
    LoadError in one sentence for a concurrency outside the run's levels."""
    spec = [s for s in samples if s.flags_hash == spec_hash]
    levels = sorted({s.concurrency for s in spec})
    for n in (from_n, to_n):
        if not levels or not levels[0] <= n <= levels[-1]:
            span = f"{levels[0]} to {levels[-1]}" if levels else "none"
            raise LoadError(
                f"Concurrency {n} is outside the load run's levels ({span}); run "
                f"`specconsole load HOST --concurrency {min(from_n, to_n)},{max(from_n, to_n)}`."
            )
    rng = random.Random(seed)
    draws: dict[int, list[float]] = {}
    values: dict[int, float] = {}
    for n in levels:
        level, drawn = load_level(n, [s for s in spec if s.concurrency == n], rng=rng,
                                  resamples=resamples)  # fmt: skip
        draws[n], values[n] = drawn, level.stream_tok_s.value
    count = min(len(d) for d in draws.values())
    logs = tuple(_at(levels, draws, to_n, i) - _at(levels, draws, from_n, i) for i in range(count))

    def value_at(n: int) -> float:
        return math.exp(_at(levels, {m: [v] for m, v in values.items()}, n, 0))

    tail = (1 - LEVEL) / 2
    ratio = Interval(value_at(to_n) / value_at(from_n), math.exp(percentile(logs, tail)),
                     math.exp(percentile(logs, 1 - tail)))  # fmt: skip
    return LoadFactor(from_n, to_n, ratio, logs, source)


def level_noise(
    samples: Sequence[RequestSample], spec_hash: str, n: int, source: str
) -> FigureNoise | None:
    """One request's per-stream spread at the level nearest `n` (in log N) of the run."""
    spec = [s for s in samples if s.flags_hash == spec_hash and s.ok and s.decode_time_s]
    levels = sorted({s.concurrency for s in spec})
    if not levels:
        return None
    nearest = min(levels, key=lambda m: abs(math.log(m) - math.log(n)))
    at = [s for s in spec if s.concurrency == nearest]
    context = float(at[0].decode_context or at[0].context_tokens) if at else 0.0
    return spread_of(at[0].text_type, context, [_stream_rate(s) for s in at],
                     f"{source}, concurrency {nearest}")  # fmt: skip


@dataclass(frozen=True)
class LoadVerdict:
    """A typed pair across concurrencies, read through the load factor."""

    outcome: Outcome
    observed: float
    at_n: int
    baseline: float
    from_n: int
    factor: LoadFactor
    expected: Interval
    residual: Interval
    decision: Interval
    noise: tuple[FigureNoise | None, FigureNoise | None]  # observed's, baseline's

    @property
    def headline(self) -> str:
        change = f"{self.residual.value - 1:+.0%}"
        if self.outcome == "not physics":
            return (
                f"Not physics: one stream reads {change} beyond what concurrency "
                f"{self.from_n} -> {self.at_n} explains on this host; worth a bug hunt."
            )
        if self.outcome == "not enough evidence":
            return (
                f"Not enough evidence: the residual beyond the load ({change}, "
                f"[{self.residual.low - 1:+.0%}, {self.residual.high - 1:+.0%}]) is too "
                "wide to tell; type medians of more requests (--observed-requests)."
            )
        return (f"Physics: the load explains it; concurrency {self.from_n} -> {self.at_n} "
                f"leaves {change} [{self.residual.low - 1:+.0%}, {self.residual.high - 1:+.0%}], "
                "within noise.")  # fmt: skip

    def lines(self) -> list[str]:
        out = [
            self.headline,
            f"  observed: {fmt.tok_s(self.observed)} tok/s a stream at concurrency {self.at_n}",
            f"  baseline: {fmt.tok_s(self.baseline)} tok/s a stream at concurrency {self.from_n}",
            f"  {self.factor.text()}",
            f"  expected {fmt.tok_s(self.expected.value)} [{fmt.tok_s(self.expected.low)}–"
            f"{fmt.tok_s(self.expected.high)}] tok/s; residual {self.residual.value - 1:+.0%} "
            f"[{self.residual.low - 1:+.0%}, {self.residual.high - 1:+.0%}]",
        ]
        for name, noise in zip(("observed", "baseline"), self.noise, strict=True):
            if noise is not None:
                out.append(f"  {name} carries this host's noise: {noise.text()}")
        out.append("  both figures are read at the load run's context and text, where the "
                   "factor was measured")  # fmt: skip
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "headline": self.headline,
                "observed": self.observed, "concurrency": self.at_n,
                "baseline": self.baseline, "baseline_concurrency": self.from_n,
                "factor": self.factor.as_dict(), "expected": self.expected.as_dict(),
                "residual": self.residual.as_dict(), "decision": self.decision.as_dict(),
                "noise": [n.as_dict() if n else None for n in self.noise]}  # fmt: skip


def judge_load(
    samples: Sequence[RequestSample], *, spec_hash: str, observed: float, at_n: int,
    baseline: float, from_n: int = 1, observed_requests: int = 1, baseline_requests: int = 1,
    source: str = "the load run", seed: int = 0,
) -> LoadVerdict:  # fmt: skip
    """The verdict on a typed pair across concurrencies (see the module docstring)."""
    factor = load_factor(samples, spec_hash=spec_hash, from_n=from_n, to_n=at_n,
                         source=source, seed=seed)  # fmt: skip
    noise = (level_noise(samples, spec_hash, at_n, source),
             level_noise(samples, spec_hash, from_n, source))  # fmt: skip
    rng = random.Random(seed + 1)
    logs, expected = [], []
    for f in factor.log_draws:
        obs = observed * (noise[0].draw(rng, observed_requests) if noise[0] else 1.0)
        base = baseline * (noise[1].draw(rng, baseline_requests) if noise[1] else 1.0)
        logs.append(math.log(obs / base) - f)
        expected.append(base * math.exp(f))
    value = observed / (baseline * factor.ratio.value)

    def interval(level: float) -> Interval:
        tail = (1 - level) / 2
        return Interval(
            value, math.exp(percentile(logs, tail)), math.exp(percentile(logs, 1 - tail))
        )

    shown, decision = interval(LEVEL), interval(CHANGE_LEVEL)
    tail = (1 - LEVEL) / 2
    exp_iv = Interval(baseline * factor.ratio.value, percentile(expected, tail),
                      percentile(expected, 1 - tail))  # fmt: skip
    return LoadVerdict(answer(decision, shown), observed, at_n, baseline, from_n, factor,
                       exp_iv, shown, decision, noise)  # fmt: skip
