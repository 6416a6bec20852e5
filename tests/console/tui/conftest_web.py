"""Helpers for the real-terminal and real-browser tests (tmux, Chromium).

Not a conftest: the test modules import what they use, so these fixtures reach only them.
A developer machine without tmux or Chromium skips those tests with the reason; under
`CI=true` a missing part fails instead, so CI can never pass by skipping them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[3]
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(available: bool, what: str) -> None:
    """Skip when `what` is missing here, but fail in CI, where .ci/run installs it."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{what} is missing under CI=true; .ci/run must install it", pytrace=False)
    pytest.skip(f"{what} is not installed on this machine")


def require_tmux() -> str:
    path = shutil.which("tmux")
    require(path is not None, "tmux (apt-get install tmux)")
    assert path is not None
    return path


def require_chromium() -> str:
    """The system Chromium, for Playwright's `executable_path` (never a downloaded build)."""
    path = next((p for p in CHROMIUM_CANDIDATES if os.access(p, os.X_OK)), None)
    require(path is not None, "chromium (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        require(False, "playwright (pip install -e '.[test]')")
    assert path is not None
    return path


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the server exited early with code {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listened on 127.0.0.1:{port} within {timeout:.0f} s")


@dataclass
class LocalEngine:
    """An isolated `local` profile: its own config dir, engine port and state dir."""

    env: dict[str, str]
    config_dir: Path
    port: int

    def cli(self, *args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "console.cli", *args],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture
def local_engine(tmp_path: Path) -> Iterator[LocalEngine]:
    """Profile `local` on a free port with warm-up skipped; the engine is stopped after."""
    config_dir = tmp_path / "config"
    (config_dir / "hosts").mkdir(parents=True)
    port = free_port()
    state = tmp_path / "state"
    (config_dir / "hosts" / "local.toml").write_text(
        f'engine = "builtin"\nport = {port}\nstate_dir = "{state}"\n\n'
        f'[launch]\npython = "{sys.executable}"\n\n'
        "[flags]\nskip-server-warmup = true\n"
    )
    env = {
        **os.environ,
        "SPECCONSOLE_CONFIG_DIR": str(config_dir),
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(REPO),
    }
    engine = LocalEngine(env=env, config_dir=config_dir, port=port)
    try:
        yield engine
    finally:
        engine.cli("stop", "local", timeout=60)


@contextlib.contextmanager
def process_group(argv: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """Run argv in its own session so the whole tree (server + per-tab apps) is ended."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield proc
    finally:
        _end_group(proc)


def _end_group(proc: subprocess.Popen) -> None:
    import signal

    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            # The server is gone; give its session apps a moment, then make sure.
            time.sleep(0.2)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
