"""The console in a real terminal: tmux runs `specconsole connect local`, keys go in with
send-keys, and `capture-pane -p` reads the screen as an operator would see it.

Pilot tests drive the app inside its own event loop with a headless driver; this is the
check that the real Linux driver, terminal size, key decoding and the bundled engine all
work together. The engine is real (profile `local` on a free port, warm-up skipped) and is
stopped at the end; tmux uses a private socket and no user config.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.tui.conftest_web import LocalEngine, local_engine, require_tmux

__all__ = ["local_engine"]  # the fixture, imported for pytest

COLS, ROWS = 160, 48


class Tmux:
    """One detached tmux session on a private server."""

    def __init__(self, tmux: str, workdir: Path, env: dict[str, str]) -> None:
        self.tmux = tmux
        self.socket = workdir / "tmux.sock"
        self.conf = workdir / "tmux.conf"
        # Keep the pane after the app exits so its exit status and last screen stay readable.
        self.conf.write_text("set -g remain-on-exit on\nset -g default-terminal screen-256color\n")
        self.env = env

    def cmd(self, *args: str) -> str:
        out = subprocess.run(
            [self.tmux, "-S", str(self.socket), "-f", str(self.conf), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode == 0, f"tmux {args[0]} failed: {out.stderr.strip()}"
        return out.stdout

    def start(self, argv: list[str]) -> None:
        self.cmd(
            "new-session", "-d", "-s", "console", "-x", str(COLS), "-y", str(ROWS),
            "-e", f"SPECCONSOLE_CONFIG_DIR={self.env['SPECCONSOLE_CONFIG_DIR']}",
            shlex.join(argv),
        )  # fmt: skip

    def screen(self) -> str:
        return self.cmd("capture-pane", "-p", "-t", "console")

    def keys(self, *keys: str) -> None:
        self.cmd("send-keys", "-t", "console", *keys)

    def pane(self) -> tuple[bool, str]:
        fields = self.cmd(
            "list-panes", "-t", "console", "-F", "#{pane_dead} #{pane_dead_status}"
        ).split()
        return fields[0] == "1", fields[1] if len(fields) > 1 else ""

    def wait_for(self, what: str, test: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            if self.pane()[0]:
                break
            time.sleep(0.25)
        pytest.fail(f"the pane never showed {what}; last screen:\n{screen}", pytrace=False)

    def close(self) -> None:
        subprocess.run(
            [self.tmux, "-S", str(self.socket), "kill-server"], capture_output=True, timeout=30
        )


@pytest.fixture
def tmux(tmp_path: Path, local_engine: LocalEngine) -> Iterator[Tmux]:
    session = Tmux(require_tmux(), tmp_path, local_engine.env)
    try:
        yield session
    finally:
        session.close()


def _connect_argv() -> list[str]:
    return [sys.executable, "-m", "console.cli", "connect", "local"]


def _dashboard(screen: str) -> bool:
    return all(
        part in screen for part in ("decode tok/s", "key flags", "last requests", "d Dashboard")
    )


def test_dashboard_appears_and_starts_the_engine(tmux: Tmux, local_engine: LocalEngine) -> None:
    tmux.start(_connect_argv())
    screen = tmux.wait_for("the dashboard", _dashboard, timeout=60)
    lines = screen.splitlines()
    assert len(lines) == ROWS and max(len(line) for line in lines) <= COLS
    tmux.wait_for("the stopped engine", lambda s: "STOPPED" in s, timeout=30)
    assert "Press S to start it" in tmux.screen()

    tmux.keys("S")
    ready = re.compile(rf"local\s+builtin\s+ready\s+pid \d+\s+port {local_engine.port}")
    tmux.wait_for(
        "the engine ready in the status bar with its pid",
        lambda s: "READY" in s and ready.search(s.splitlines()[0]) is not None,
        timeout=240,
    )
    # The flag panel now reads the running engine's values.
    tmux.wait_for("the engine's flags", lambda s: re.search(r"tree budget\s+\d+", s), timeout=30)

    tmux.keys("q")
    deadline = time.monotonic() + 30
    while not tmux.pane()[0] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tmux.pane() == (True, "0"), "the console did not quit cleanly on q"
    # Quitting leaves the service running, as the headless CLI does.
    status = local_engine.cli("status", "local")
    assert status.returncode == 0 and "local: ready" in status.stdout, status.stdout + status.stderr


def _prompt_key() -> str | None:
    from console.tui import keys

    for spec in keys.KEYS:
        if "prompt" in spec.id or "prompt" in spec.action:
            return spec.keys.split(",")[0].strip()
    return None


def test_dashboard_shows_tok_s_after_a_prompt(tmux: Tmux, local_engine: LocalEngine) -> None:
    key = _prompt_key()
    if key is None:
        pytest.skip("the console has no key to fire a test prompt yet (console/tui/keys.py)")
    started = local_engine.cli("start", "local", "--wait", timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    tmux.start(_connect_argv())
    tmux.wait_for("the dashboard, ready", lambda s: _dashboard(s) and "READY" in s, timeout=90)
    tmux.keys(key)
    row = re.compile(r"│\s*(code|prose|\w+)\s+\d+\s+\d+\s+(\d+\.\d)\s+\d+\.\d\d\s")
    screen = tmux.wait_for("a request row with tok/s", lambda s: row.search(s), timeout=180)
    tok_s = float(row.search(screen).group(2))  # type: ignore[union-attr]
    assert tok_s > 0
