"""Shared fixtures: tiny random model pairs written to disk like real checkpoints."""

from __future__ import annotations

import os
from pathlib import Path

# Tests measure behaviour, not speed. One torch thread per process keeps a test process and
# the engine subprocesses it starts from fighting over two cores (an OpenMP thread that
# loses its core stalls every parallel op); subprocesses inherit this.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest


@pytest.fixture(scope="session")
def tiny_pair(tmp_path_factory) -> tuple[Path, Path]:
    """(target_dir, drafter_dir) of a tiny random Qwen3 target and DFlash drafter."""
    pytest.importorskip("torch")
    from engine.tiny import make_random_pair

    return make_random_pair(tmp_path_factory.mktemp("tiny_pair"), seed=0)
