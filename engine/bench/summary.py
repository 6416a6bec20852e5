"""Per-method statistics over prompts: medians, quartiles, paired ratios against AR, memory.

Nothing is summed across prompts, so a slow prompt and a fast one count alike.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from engine.decode import Generation

MIB = 1024 * 1024


def repeated_ngram_fraction(tokens: list[int], n: int = 8) -> float:
    """Share of the output's n-grams that already occurred earlier in it. Looping text is
    easy to draft, so a high value means the commit length is inflated by repetition, not
    earned by the drafter."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    seen: set[tuple[int, ...]] = set()
    repeats = 0
    for g in grams:
        repeats += g in seen
        seen.add(g)
    return repeats / len(grams) if grams else 0.0


@dataclass
class PromptRuns:
    """One prompt's repeated runs of one method, and the AR runs they were paired with."""

    id: str
    type: str
    runs: list[Generation] = field(default_factory=list)
    device_peak_bytes: list[int] = field(default_factory=list)  # CUDA only
    ratios: list[float] = field(default_factory=list)  # vs the neighbouring AR run

    @property
    def tok_s(self) -> float:
        return statistics.median(g.decode_tok_per_s for g in self.runs)

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    """(q1, median, q3); a single value is its own quartiles."""
    if len(xs) < 2:
        return (xs[0],) * 3 if xs else (0.0, 0.0, 0.0)
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def tukey_outliers(xs: list[float]) -> int:
    q1, _, q3 = quartiles(xs)
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return sum(1 for x in xs if x < lo or x > hi)


def _median_over_prompts(prompts: list[PromptRuns], per_run) -> float:
    return round(
        statistics.median(statistics.median(per_run(g) for g in p.runs) for p in prompts), 3
    )


def summarize(prompts: list[PromptRuns]) -> dict:
    if not prompts:
        return {
            "decode_tok_s": 0.0,
            "commit_mean": 0.0,
            "step_ms": 0.0,
            "prompts": 0,
            "decode_tokens": 0,
        }
    first = [p.runs[0] for p in prompts]  # tokens and commits are the same in every repeat
    q1, tok_s, q3 = quartiles([p.tok_s for p in prompts])
    kv = [g.kv_cache_bytes for p in prompts for g in p.runs]
    device = [b for p in prompts for b in p.device_peak_bytes]
    out = {
        "decode_tok_s": round(tok_s, 2),
        "decode_tok_s_iqr": [round(q1, 2), round(q3, 2)],
        "commit_mean": round(statistics.fmean(g.commit_mean for g in first), 3),
        "step_ms": _median_over_prompts(prompts, lambda g: g.decode_ms / max(1, len(g.rounds))),
        "draft_ms": _median_over_prompts(prompts, lambda g: _mean_phase(g, "draft_ms")),
        "tree_ms": _median_over_prompts(prompts, lambda g: _mean_phase(g, "tree_ms")),
        "verify_ms": _median_over_prompts(prompts, lambda g: _mean_phase(g, "verify_ms")),
        "commit_ms": _median_over_prompts(prompts, lambda g: _mean_phase(g, "commit_ms")),
        "decode_tokens": sum(g.decode_tokens for g in first),  # per pass over the prompts
        "prompts": len(prompts),
        "repeated_8gram_frac": round(
            statistics.fmean(repeated_ngram_fraction(g.tokens) for g in first), 3
        ),
        "kv_cache_peak_mib": round(max(kv) / MIB, 3),
        "device_peak_mib": round(max(device) / MIB, 3) if device else None,
    }
    ratios = [p.ratio for p in prompts if p.ratio is not None]
    if ratios:
        q1, med, q3 = quartiles(ratios)
        out["speedup_vs_ar"] = round(med, 3)
        out["speedup_iqr"] = [round(q1, 3), round(q3, 3)]
        out["speedup_outliers"] = tukey_outliers(ratios)
        out["repeat_spread"] = round(
            statistics.median(
                (max(p.ratios) - min(p.ratios)) / p.ratio for p in prompts if p.ratio
            ),
            4,
        )
    return out


def _mean_phase(g: Generation, phase: str) -> float:
    return statistics.fmean(getattr(r, phase) for r in g.rounds) if g.rounds else 0.0
