"""Shared fixtures: tiny random model pairs written to disk like real checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_pair(tmp_path_factory) -> tuple[Path, Path]:
    """(target_dir, drafter_dir) of a tiny random Qwen3 target and DFlash drafter."""
    pytest.importorskip("torch")
    from engine.tiny import make_random_pair

    return make_random_pair(tmp_path_factory.mktemp("tiny_pair"), seed=0)
