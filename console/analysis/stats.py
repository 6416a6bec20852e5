"""Per-point summaries of request samples: pooled figures with intervals, and medians.

A point's figures are pooled (`intervals.pooled_figures`: all decode tokens / all verify
steps / all decode time, with a bootstrap interval over its requests), so its tok/s is
exactly its commit over its step time and every comparison of two points compares like
with like. The median and the lowest-highest range over repeats stay beside them as the
per-request picture: a wide range with a narrow pooled interval is many requests, a
single slow request stands out in the range without moving a median.
Flagged samples never enter a summary; they are counted beside it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from console.analysis.intervals import PooledFigures, pooled_figures
from console.analysis.records import RequestSample


@dataclass(frozen=True)
class Spread:
    """Median with the lowest and highest value (the spread over repeats) and the count."""

    median: float
    low: float
    high: float
    n: int

    @property
    def rel(self) -> float:
        """(high - low) / median: the relative spread over repeats."""
        return (self.high - self.low) / self.median if self.median else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "low": self.low, "high": self.high, "n": self.n}

    def text(self, fmt: str = "{:.1f}", scale: float = 1.0) -> str:
        med = fmt.format(self.median * scale)
        if self.n < 2:
            return med
        lo, hi = fmt.format(self.low * scale), fmt.format(self.high * scale)
        return f"{med} [{lo}–{hi}]"


def spread(values: Iterable[float | None]) -> Spread | None:
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    return Spread(statistics.median(vals), min(vals), max(vals), len(vals))


@dataclass(frozen=True)
class PointSummary:
    """The repeats of one sweep point (text type, context, output length) summarized:
    `pooled` holds the figures to compare (None when no request had decode time and
    verify steps); `tok_s`, `commit`, `step_s` are per-request medians and ranges."""

    text_type: str
    context: int
    max_tokens: int
    n: int
    flagged: int
    tok_s: Spread | None
    commit: Spread | None
    step_s: Spread | None
    ttft_s: Spread | None
    decode_context: float
    sources: tuple[str, ...]
    pooled: PooledFigures | None = None

    def as_dict(self) -> dict[str, Any]:
        def d(s: Spread | None) -> dict[str, float] | None:
            return s.as_dict() if s else None

        return {
            "text_type": self.text_type,
            "context": self.context,
            "max_tokens": self.max_tokens,
            "n": self.n,
            "flagged": self.flagged,
            "decode_tok_s": d(self.tok_s),
            "commit_len": d(self.commit),
            "step_time_s": d(self.step_s),
            "ttft_s": d(self.ttft_s),
            "decode_context": self.decode_context,
            "sources": list(self.sources),
            "pooled": self.pooled.as_dict() if self.pooled else None,
        }


def summarize(
    samples: Iterable[RequestSample],
    key: Callable[[RequestSample], tuple] = lambda s: (s.text_type, s.context_tokens, s.max_tokens),
) -> list[PointSummary]:
    groups: dict[tuple, list[RequestSample]] = {}
    for sample in samples:
        groups.setdefault(key(sample), []).append(sample)
    out = []
    for group in groups.values():
        ok = [s for s in group if s.ok]
        first = group[0]
        out.append(
            PointSummary(
                text_type=first.text_type,
                context=first.context_tokens,
                max_tokens=first.max_tokens,
                n=len(ok),
                flagged=len(group) - len(ok),
                tok_s=spread(s.decode_tok_s for s in ok),
                commit=spread(s.commit_len for s in ok),
                step_s=spread(s.step_time_s for s in ok),
                ttft_s=spread(s.ttft_s for s in ok),
                decode_context=statistics.fmean(
                    s.decode_context or s.context_tokens for s in (ok or group)
                ),
                sources=tuple(sorted({s.decode_source or "none" for s in ok})),
                pooled=pooled_figures(group),
            )
        )
    return sorted(out, key=lambda p: (p.text_type, p.context, p.max_tokens))
