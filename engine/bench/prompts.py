"""The benchmark's prompts: a JSONL file of `{"id", "type", "prompt"}` rows.

Near-identical prompts (the stdlib's codec modules are one template filled in a hundred
times) would count one text several times and make the spread across prompts describe
the copies instead of the engine, so the loader keeps the first of each group of
near-duplicates and says which it left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SHINGLE = 12  # characters per shingle
NEAR_DUPLICATE = 0.15  # Jaccard similarity of the shingle sets from which two are one text


def shingles(text: str, n: int = SHINGLE) -> set[str]:
    return {text[i : i + n] for i in range(max(1, len(text) - n + 1))}


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of two texts' character shingles (1.0: the same text)."""
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def is_near_duplicate(text: str, kept: list[str]) -> bool:
    return any(similarity(text, other) >= NEAR_DUPLICATE for other in kept)


def drop_near_duplicates(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """The rows without near-duplicates of an earlier row, and the ids left out."""
    kept: list[dict] = []
    dropped: list[str] = []
    for i, r in enumerate(rows):
        if is_near_duplicate(r["prompt"], [k["prompt"] for k in kept]):
            dropped.append(str(r.get("id", i)))
        else:
            kept.append(r)
    return kept, dropped


def load_prompts(path: Path, types: list[str] | None, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows, dropped = drop_near_duplicates(rows)
    if dropped:
        print(
            f"left out {len(dropped)} near-duplicate prompt(s) of earlier ones: "
            + ", ".join(dropped),
            file=sys.stderr,
        )
    if types:
        rows = [r for r in rows if r.get("type", "text") in types]
    if limit:
        by_type: dict[str, list[dict]] = {}
        for r in rows:
            by_type.setdefault(r.get("type", "text"), []).append(r)
        rows = [r for group in by_type.values() for r in group[:limit]]
    return rows
