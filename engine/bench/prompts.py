"""The benchmark's prompts: a JSONL file of `{"id", "type", "prompt"}` rows."""

from __future__ import annotations

import json
from pathlib import Path


def load_prompts(path: Path, types: list[str] | None, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if types:
        rows = [r for r in rows if r.get("type", "text") in types]
    if limit:
        by_type: dict[str, list[dict]] = {}
        for r in rows:
            by_type.setdefault(r.get("type", "text"), []).append(r)
        rows = [r for group in by_type.values() for r in group[:limit]]
    return rows
