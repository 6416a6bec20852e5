"""Training and benchmark text from local files: by default the running interpreter's own
standard-library source (tests excluded), split into train and held-out *by file* so that
held-out prompts are text the target never saw."""

from __future__ import annotations

import hashlib
import sysconfig
from collections.abc import Iterable
from pathlib import Path

import numpy as np

SKIP_DIRS = {"test", "tests", "idle_test", "site-packages", "__pycache__", "lib2to3", "idlelib"}
HELD_OUT_PERCENT = 5


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def source_files(root: Path | None = None, suffix: str = ".py") -> list[Path]:
    root = root or stdlib_root()
    out = []
    for p in sorted(root.rglob(f"*{suffix}")):
        rel = p.relative_to(root).parts
        if any(part in SKIP_DIRS for part in rel) or p.name.startswith("test_"):
            continue
        out.append(p)
    return out


def is_held_out(path: Path, root: Path) -> bool:
    """Stable split: a file's relative path hashes into the held-out bucket or not."""
    digest = hashlib.sha256(str(path.relative_to(root)).encode()).digest()
    return digest[0] * 100 // 256 < HELD_OUT_PERCENT


def split_files(root: Path | None = None) -> tuple[list[Path], list[Path]]:
    root = root or stdlib_root()
    files = source_files(root)
    train = [p for p in files if not is_held_out(p, root)]
    held = [p for p in files if is_held_out(p, root)]
    return train, held


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def encode_files(files: Iterable[Path], eos_id: int) -> np.ndarray:
    """All files as one byte-token stream, each file followed by EOS (uint16 ids)."""
    chunks = []
    for p in files:
        data = np.frombuffer(read_text(p).encode("utf-8"), dtype=np.uint8).astype(np.uint16)
        chunks.append(data)
        chunks.append(np.array([eos_id], dtype=np.uint16))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.uint16)


# Hand-written English prose and reasoning prompts: text unlike the code the target was
# trained on, so the drafter's acceptance (and the speedup) is visibly lower on them.
PROSE_PROMPTS = [
    (
        "The committee met on Tuesday to discuss the budget for next year. After a long "
        "debate, they agreed that"
    ),
    (
        "Question: A train leaves the station at 3 pm travelling at 60 miles per hour. "
        "How far has it gone by 5 pm?\nAnswer: Let's think step by step."
    ),
    (
        "Once upon a time, in a small village at the edge of the forest, there lived an "
        "old clockmaker who"
    ),
    "The main reasons the Roman Empire declined were economic trouble, military overreach, and",
    (
        "Dear hiring manager,\n\nI am writing to apply for the position of operations "
        "engineer. In my previous role I"
    ),
    (
        "To make a good cup of tea, first boil fresh water. Then warm the pot, add one "
        "spoon of leaves per person, and"
    ),
    (
        "Photosynthesis is the process by which green plants use sunlight to turn water "
        "and carbon dioxide into"
    ),
    (
        "If all cats are mammals and some mammals can swim, can we conclude that some "
        "cats can swim? Reasoning:"
    ),
    (
        "The weather report for the weekend says that a cold front will move in from the "
        "north, bringing"
    ),
    (
        "In summary, the experiment showed that the new method was faster than the old "
        "one, but it also"
    ),
]


def _code_prompt(text: str, target_len: int = 320) -> str | None:
    """A prompt that ends right after a function header, so the model writes a body."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    for i, ln in enumerate(lines):
        if (
            offsets[i] < target_len
            or not ln.lstrip().startswith("def ")
            or not ln.rstrip().endswith(":")
        ):
            continue
        end = offsets[i + 1]
        begin = max(0, end - target_len)
        begin = text.rfind("\n", 0, begin) + 1  # start on a line boundary
        return text[begin:end]
    return None


def build_bench_prompts(root: Path | None = None, n_code: int = 12) -> list[dict]:
    """Held-out code prompts (files the target never trained on), none a near-duplicate of
    another (the codec modules repeat one template), plus the prose prompts."""
    root = root or stdlib_root()
    _, held = split_files(root)
    from engine.bench.prompts import is_near_duplicate

    out = []
    for p in held:
        prompt = _code_prompt(read_text(p))
        if prompt and not is_near_duplicate(prompt, [r["prompt"] for r in out]):
            out.append(
                {
                    "id": f"code-{len(out):02d}",
                    "type": "code",
                    "source": str(p.relative_to(root)),
                    "prompt": prompt,
                }
            )
        if len(out) == n_code:
            break
    for i, text in enumerate(PROSE_PROMPTS):
        out.append(
            {"id": f"prose-{i:02d}", "type": "prose", "source": "hand-written", "prompt": text}
        )
    return out


# The prompt set ships with the engine package (engine/prompts), not with training.
BENCH_PROMPTS_PATH = Path(__file__).resolve().parents[1] / "prompts" / "bench.jsonl"


def main() -> None:
    """`python -m engine.train.corpus` rewrites the shipped benchmark prompt set."""
    import json

    BENCH_PROMPTS_PATH.parent.mkdir(parents=True, exist_ok=True)
    rows = build_bench_prompts()
    BENCH_PROMPTS_PATH.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} prompts to {BENCH_PROMPTS_PATH}")


if __name__ == "__main__":
    main()
