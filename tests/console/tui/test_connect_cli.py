"""`specconsole connect` refuses what it cannot open before taking the screen: one
sentence on stderr, exit 1, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from console.tui.settings import settings_path


def _connect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "console.cli", "connect", *args],
        capture_output=True, text=True, timeout=60, env=os.environ.copy(), stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_unknown_host_and_bad_settings_are_one_sentence() -> None:
    out = _connect("nowhere")
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert "neither a host profile" in out.stderr and "Traceback" not in out.stderr
    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text("[keys]\ndashbord = 'x'\n")
    out = _connect("local")
    assert out.returncode == 1 and out.stderr.count("\n") == 1
    assert "did you mean 'dashboard'" in out.stderr
