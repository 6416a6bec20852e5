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
