"""The console in a real terminal: tmux runs `specconsole connect local`, keys go in with
send-keys, and `capture-pane -p` reads the screen as an operator would see it.

Pilot tests drive the app inside its own event loop with a headless driver; this is the
check that the real Linux driver, terminal size, key decoding and the bundled engine all
work together. The engine is real (profile `local` on a free port, warm-up skipped) and is
stopped at the end; tmux uses a private socket and no user config.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.console.tui.conftest_web import LocalEngine, local_engine, require_tmux

__all__ = ["local_engine"]  # the fixture, imported for pytest

COLS, ROWS = 160, 48


class Tmux:
    """One detached tmux session on a private server."""

    def __init__(self, tmux: str, workdir: Path, env: dict[str, str]) -> None:
        self.tmux = tmux
        self.socket = workdir / "tmux.sock"
        self.conf = workdir / "tmux.conf"
        # Keep the pane after the app exits so its last screen stays readable.
        self.conf.write_text("set -g remain-on-exit on\nset -g default-terminal screen-256color\n")
        # A test worker may carry COLUMNS/LINES (pytest-xdist's do: 80x24); the app would
        # take them over the pane's real size, so the pane's programs never see them.
        self.env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        self.exit_file = workdir / "exit-status"

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

    def start(self, argv: list[str], size: tuple[int, int] = (COLS, ROWS)) -> None:
        self.cmd(
            "new-session", "-d", "-s", "console", "-x", str(size[0]), "-y", str(size[1]),
            "-e", f"SPECCONSOLE_CONFIG_DIR={self.env['SPECCONSOLE_CONFIG_DIR']}",
            # The shell records the exit status: tmux 3.3 sometimes leaves its dead child
            # unreaped (a zombie), and then reports no status at all.
            f"{shlex.join(argv)}; echo $? > {shlex.quote(str(self.exit_file))}",
        )  # fmt: skip

    def screen(self) -> str:
        return self.cmd("capture-pane", "-p", "-t", "console")

    def keys(self, *keys: str) -> None:
        self.cmd("send-keys", "-t", "console", *keys)

    def running(self) -> bool:
        return not self.exit_file.exists()

    def wait_exit(self, timeout: float) -> str:
        """The app's exit status, or why there is none."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exit_file.exists() and self.exit_file.read_text().strip():
                return self.exit_file.read_text().strip()
            time.sleep(0.1)
        return f"no exit within {timeout:.0f} s; screen:\n{self.screen()}"

    def wait_for(self, what: str, test: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            if not self.running():
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
    assert tmux.wait_exit(30) == "0", "the console did not quit cleanly on q"
    # Quitting leaves the service running, as the headless CLI does.
    status = local_engine.cli("status", "local")
    assert status.returncode == 0 and "local: ready" in status.stdout, status.stdout + status.stderr


def _key(binding_id: str) -> str:
    """The default key of a binding, from the app's own key table (tmux key names)."""
    from console.tui import keys

    key = keys.BY_ID[binding_id].keys.split(",")[0].strip()
    return {"ctrl+r": "C-r", "escape": "Escape"}.get(key, key)


def tok_s_of_first_request(screen: str) -> float | None:
    """The tok/s cell of the first row under a header with tok/s, commit and TTFT columns
    (the dashboard's "last requests" table, the prompt lab's results)."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if "tok/s" in line and "commit" in line and "TTFT ms" in line and i + 1 < len(lines):
            column = line.index("tok/s")
            cell = re.match(r"\s*([0-9]+\.[0-9])", lines[i + 1][column - 2 :])
            return float(cell.group(1)) if cell else None
    return None


def test_dashboard_shows_tok_s_after_a_prompt(tmux: Tmux, local_engine: LocalEngine) -> None:
    started = local_engine.cli("start", "local", "--wait", timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    tmux.start(_connect_argv())
    tmux.wait_for("the dashboard, ready", lambda s: _dashboard(s) and "READY" in s, timeout=90)
    assert tok_s_of_first_request(tmux.screen()) is None  # no request measured yet

    # The prompt lab with its defaults (a library prompt, exact context, ignore_eos).
    tmux.keys(_key("prompt-lab"))
    tmux.wait_for("the prompt lab", lambda s: "generated text" in s and "results" in s, 30)
    tmux.wait_for("no action running", lambda s: "C cancels" not in s.splitlines()[0], 60)
    tmux.keys(_key("prompt-run"))
    screen = tmux.wait_for(
        "the prompt's result row",
        lambda s: "request(s)" in s and tok_s_of_first_request(s) is not None,
        timeout=240,
    )
    assert (tok_s_of_first_request(screen) or 0) > 0, screen
    # Back on the dashboard (leave the form field first so `d` is a key, not text).
    tmux.keys(_key("prompt-back"))
    time.sleep(0.5)  # a lone Escape, not the start of alt+d
    tmux.keys(_key("dashboard"))
    screen = tmux.wait_for(
        "the dashboard with the request's tok/s",
        lambda s: _dashboard(s) and tok_s_of_first_request(s) is not None,
        timeout=30,
    )
    tok_s = tok_s_of_first_request(screen)
    assert tok_s is not None and tok_s > 0, screen


def test_a_repeated_prompt_is_in_view_at_80x24(tmux: Tmux, local_engine: LocalEngine) -> None:
    # The prompt lab's results took a fixed share: a run's raw rows fell below its edge.
    import json

    started = local_engine.cli("start", "local", "--wait", timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    form = {"#lab-max": "24", "#lab-repeat": "3"}  # the form as a last session left it
    (local_engine.config_dir / "tui-forms.json").write_text(json.dumps({"local": {"prompt": form}}))
    tmux.start(_connect_argv(), size=(80, 24))
    tmux.wait_for("the dashboard, ready", lambda s: "ready" in s.splitlines()[0], timeout=90)
    tmux.keys(_key("prompt-lab"))
    tmux.wait_for("the prompt lab", lambda s: "results" in s and "Run prompt" in s, 30)
    tmux.wait_for("no action running", lambda s: "C cancels" not in s.splitlines()[0], 60)
    tmux.keys(_key("prompt-run"))
    screen = tmux.wait_for("the run's rows", lambda s: "3 request(s), stored" in s, 240)
    lines = screen.splitlines()
    assert len(lines) == 24 and "q Quit" in lines[-1], screen
    assert sum(bool(re.search(r"code\s+256\s+n=3\s+\d", line)) for line in lines) == 1, screen
    interval = r"\d+\.\d–\d+\.\d\s+\d+\.\d\d–\d+\.\d\d\s+\d+\.\d\d–\d+\.\d\d"
    assert any(re.search(rf"95% CI\s+{interval}", line) for line in lines), screen
    raw = [line for line in lines if re.search(r"code\s+256\s+24/24\s", line)]
    assert len(raw) == 3, f"{len(raw)} of 3 raw rows in view:\n{screen}"


def _click(tmux: Tmux, column: int, row: int) -> None:
    """A left click at a 1-based cell, as the terminal writes it (SGR mouse reporting,
    which the app turns on): the press and the release."""
    for end in "Mm":
        tmux.cmd("send-keys", "-t", "console", "-l", f"\x1b[<0;{column};{row}{end}")


def _points_rows(screen: str) -> list[str]:
    """The rows inside the sweeps view's points panel."""
    lines = screen.splitlines()
    top = next(i for i, line in enumerate(lines) if "─ points" in line)
    bottom = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("╰"))
    return lines[top + 1 : bottom]


def test_a_sweep_run_at_80x24_folds_its_form_and_keeps_every_point_in_view(
    tmux: Tmux, local_engine: LocalEngine
) -> None:
    # At 80x24 the form, the points and the verdict do not fit at once: a real sweep run
    # from the form folds the form into one line that says what it holds, every point is
    # in view with its interval, a click on the line opens the form, Escape folds it.
    started = local_engine.cli("start", "local", "--wait", timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    tmux.start(_connect_argv(), size=(80, 24))
    tmux.wait_for("the dashboard, ready", lambda s: "ready" in s.splitlines()[0], timeout=90)
    tmux.keys(_key("sweeps"))
    tmux.wait_for("the sweep form", lambda s: "contexts (tokens)" in s, timeout=30)
    tmux.wait_for("no action running", lambda s: "C cancels" not in s.splitlines()[0], 60)
    # contexts, output tokens, text types, repeat: Tab selects a field's text, typing
    # replaces it
    tmux.keys("Tab", "64,256", "Tab", "16", "Tab", "code,prose", "Tab", "2")
    tmux.wait_for("the typed sweep", lambda s: re.search(r"▼\W+64,256\W+16\W+code,prose", s)
                  is not None and "repeat 2" in s, timeout=ECHO_S)  # fmt: skip
    tmux.keys(_key("sweep-run"))
    screen = tmux.wait_for("the run's points", lambda s: "8 requests, stored as run" in s, 300)
    lines = screen.splitlines()
    assert len(lines) == 24 and "q Quit" in lines[-1], screen
    folded = "Edit sweep ▸ context · 64,256 · out 16 · code,prose · repeat 2"
    assert lines[1].strip().startswith(folded), screen  # the form, one line, under the bar
    assert "contexts (tokens)" not in screen, screen
    interval = r"\d+\.\d \[\d+\.\d–\d+\.\d\]\s+\d\.\d\d \[\d\.\d\d–\d\.\d\d\]"
    for text in ("code", "prose"):
        for context in (64, 256):
            row = [r for r in _points_rows(screen) if re.search(rf"{text}\s+{context}\s+2\s", r)]
            assert len(row) == 1 and re.search(interval, row[0]), (text, context, screen)
    assert "model from this sweep" in screen, screen  # the verdict panel's model, in view

    _click(tmux, 10, 2)  # on the folded line
    screen = tmux.wait_for("the form open", lambda s: "contexts (tokens)" in s, timeout=ECHO_S)
    assert "Edit sweep" not in screen and "q Quit" in screen.splitlines()[-1], screen
    tmux.keys("Tab", "Tab", "24")  # the output field: what the folded line names next
    tmux.wait_for("the output typed", lambda s: re.search(r"64,256\W+24\W", s) is not None,
                  timeout=ECHO_S)  # fmt: skip
    tmux.keys("Escape")
    screen = tmux.wait_for("the form folded again",
                           lambda s: "Edit sweep ▸ context · 64,256 · out 24 ·" in s,
                           timeout=ECHO_S)  # fmt: skip
    assert len([r for r in _points_rows(screen) if re.search(r"(code|prose)\s+(64|256)\s", r)]) == 4


def test_keys_typed_right_after_tab_land_in_the_field_tab_went_to(
    tmux: Tmux, local_engine: LocalEngine
) -> None:
    # tmux writes one send-keys to the terminal at once: the app reads "1<tab>7" as one
    # burst, the way fast typing arrives. Pilot cannot deliver keys like this.
    tmux.start(_connect_argv())
    tmux.wait_for("the dashboard", _dashboard, timeout=60)
    tmux.keys(_key("sweeps"))
    tmux.wait_for("the sweep form", lambda s: "contexts (tokens)" in s, timeout=30)
    tmux.keys("Tab", "1", "Tab", "7", "Tab", "prose")  # contexts, output tokens, text types
    tmux.wait_for(
        "each value in its own field",
        # the fields' row, then the repeat on the row under it (still its placeholder)
        lambda s: re.search(r"▼\W+1\W+7\W+prose\b", s) is not None and "repeat auto" in s,
        timeout=10,
    )


# How long typed keys may take to show under load. A lost key never arrives, so a longer
# wait fails the same on the bug these tests guard against; it only spares a host whose
# other work (a vLLM test's OpenMP threads on every core) stalls the app for seconds.
ECHO_S = 45


@contextlib.contextmanager
def cpu_load(workers: int = 2) -> Iterator[None]:
    """Busy loops on every core this machine has to spare, as a loaded host has."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(workers)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)


BURSTS = ("64,512,1024,1900,2048,3072,4096,5120", "96,480,1000,1536,2000,2500,3000,3500",
          "128,256,384,512,640,768,896,1024,1152")  # fmt: skip


def test_a_long_value_typed_in_one_burst_under_load_arrives_whole(
    tmux: Tmux, local_engine: LocalEngine
) -> None:
    """tmux writes each value in one write, as a paste or fast typing arrives, while
    busy loops hold every core: the field must hold every character, in order."""
    tmux.start(_connect_argv())
    tmux.wait_for("the dashboard", _dashboard, timeout=60)
    tmux.keys(_key("sweeps"))
    tmux.wait_for("the sweep form", lambda s: "contexts (tokens)" in s, timeout=30)
    with cpu_load():
        for i, value in enumerate(BURSTS):
            # Into the contexts field (from the method select after the first), its text
            # selected, so the burst replaces it.
            tmux.keys(*(("Tab",) if i == 0 else ("BTab", "Tab")))
            tmux.wait_for("the contexts field focused", lambda s: "Leave field" in s, 10)
            tmux.cmd("send-keys", "-t", "console", "-l", value)
            screen = tmux.wait_for(
                f"{value!r} in the contexts field",
                lambda s, v=value: re.search(rf"▼\W+{re.escape(v)}\s", s) is not None,
                timeout=ECHO_S,
            )
            assert value in screen
        # A field whose every key refilters a table (the flags search): the app's own
        # work between keys must not cost a key either.
        tmux.keys("Escape")
        tmux.wait_for("the field left", lambda s: "Leave field" not in s, 10)
        tmux.keys(_key("flags"))
        tmux.wait_for("the flags table", lambda s: "tuned and set flags" in s, timeout=60)
        for value in ("speculative-draft-window-size", "context-length", "xyzzy-no-such-flag"):
            tmux.keys("/")  # flags-search (tmux would type the name "slash")
            tmux.wait_for(f"the search focused for {value!r}", lambda s: "Leave field" in s, 10)
            tmux.cmd("send-keys", "-t", "console", "-l", value)
            tmux.wait_for(f"{value!r} in the search field",
                          lambda s, v=value: any(v in line for line in s.splitlines()[:4]),
                          timeout=ECHO_S)  # fmt: skip
            tmux.keys("C-u")  # clear it for the next
            tmux.wait_for("the search cleared", lambda s: "/ search flags" in s, 10)
            tmux.keys("Escape")
            tmux.wait_for("the field left", lambda s: "Leave field" not in s, 10)


# Values for a flag's value box, each typed in two bursts with a redraw of the flags
# table between them (the terminal resized, as a tmux pane or a browser window is).
VALUE_BURSTS = (("64,512,", "1024,1900"), ("2048,3072,40", "96,5120"), ("1900", "0,64,512"))


def test_a_flag_value_typed_while_the_table_redraws_keeps_every_key(
    tmux: Tmux, local_engine: LocalEngine
) -> None:
    """The Flags view loads the highlighted flag into its value box; a table refill (a
    resize, a new status, the engine becoming ready) once re-highlighted the first row
    and then the selected one, loading its value over what was typed: the keys typed
    before the redraw were lost and the rest staged. Under load, typed in bursts around
    a redraw, the box must hold every key in order."""
    tmux.start(_connect_argv())
    tmux.wait_for("the dashboard", _dashboard, timeout=60)
    tmux.keys(_key("flags"))
    tmux.wait_for("the flags table", lambda s: "tuned and set flags" in s, timeout=60)
    tmux.keys("Down", "Down", "Down", "Enter")  # a flag below the first: its value box
    tmux.wait_for("the value box focused", lambda s: "Leave field" in s, 10)
    with cpu_load():
        for i, (first, second) in enumerate(VALUE_BURSTS):
            value = first + second
            tmux.keys("C-u")
            tmux.cmd("send-keys", "-t", "console", "-l", first)
            # The table redraws at the new width while the rest is typed.
            tmux.cmd("resize-window", "-t", "console", "-x", str(COLS - 12 * (i % 2 + 1)))
            tmux.cmd("send-keys", "-t", "console", "-l", second)
            # The box itself (its bordered row), not the ✗ line quoting a value checked.
            whole = re.compile(rf"▊\s*{re.escape(value)}\s*▎")
            screen = tmux.wait_for(f"{value!r} whole in the value box",
                                   lambda s, w=whole: w.search(s) is not None,
                                   timeout=ECHO_S)  # fmt: skip
            assert "Leave field" in screen  # still typing in the box, not the table
