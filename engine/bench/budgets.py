"""DDTree's node budget against its cost: commit length and round time per budget and
text type, and the budget that decodes fastest.

A bigger tree commits more per round and costs more per verify (its rows go through every
layer), so the best budget depends on the pair and the CPU; the bench runs each budget as
its own arm, interleaved with AR on every prompt like the methods, and ranks them by the
median paired ratio against AR (tok/s where AR did not run).
"""

from __future__ import annotations

from engine.bench.summary import PromptRuns, summarize
from engine.decode import Decoder

FIELDS = (
    "decode_tok_s", "commit_mean", "step_ms", "draft_ms", "tree_ms", "verify_ms",
    "commit_ms", "speedup_vs_ar", "speedup_iqr", "repeat_spread",
)  # fmt: skip


def _brief(prompts: list[PromptRuns]) -> dict:
    s = summarize(prompts)
    return {k: s[k] for k in FIELDS if k in s}


def _score(row: dict) -> float:
    return row.get("speedup_vs_ar", row["decode_tok_s"])


def budget_report(
    results: dict[str, list[PromptRuns]], decoders: dict[str, Decoder], lossless: dict
) -> dict:
    """`by_budget` {budget: {"all", "by_type"}}, `best_budget` {"all"|type: budget} and
    whether the DDTree arm's own budget is the best over all prompts."""
    ddtree = [a for a, d in decoders.items() if d.method == "ddtree"]
    by_budget: dict[int, dict] = {}
    for arm in sorted(ddtree, key=lambda a: decoders[a].budget):
        prompts = results[arm]
        types = list(dict.fromkeys(p.type for p in prompts))
        by_budget[decoders[arm].budget] = {
            "all": _brief(prompts),
            "by_type": {t: _brief([p for p in prompts if p.type == t]) for t in types},
            "lossless_vs_ar": lossless[arm],
        }
    keys = ["all", *next(iter(by_budget.values()))["by_type"]]
    best = {}
    for k in keys:
        rows = {b: (r["all"] if k == "all" else r["by_type"][k]) for b, r in by_budget.items()}
        best[k] = max(rows, key=lambda b: _score(rows[b]))
    return {
        "by_budget": by_budget,
        "best_budget": best,
        "budget_is_best": best["all"] == decoders["ddtree"].budget,
    }
