"""`specconsole bench tui`: how fast the console starts, redraws and idles.

A benchmark, not a test: the figures depend on the machine and on what else runs there,
so it prints them against targets instead of asserting. Three figures, each measured the
way an operator would feel it:

* first frame: from spawning `specconsole connect` in a pseudo-terminal (a real terminal
  driver, imports included) to the moment its first full-screen paint reaches the bottom
  row. It runs with an empty, throwaway config dir, so it opens on the host picker and
  touches neither the network nor the user's settings.
* chart redraw: the dashboard's own `Chart` widget with N points (default 600), timed
  from new data to rendered lines (`set_series`, the redraw tick, `render_lines`), the
  whole UI-thread cost of one chart update. Each redraw gets a new window of data, as
  live data would.
* idle CPU: the real app, headless (`App.run_test`), on its dashboard with a real
  `EngineService` for a stopped engine (so the status poll runs as it would) and the
  three live charts fed one sample a second over N-point histories, no input; CPU time
  of this process over a fixed wall-clock window. Headless means no terminal output is
  written, which a real terminal would add.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import math
import os
import select
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from console.errors import ConsoleError

TARGET_FIRST_FRAME_S = 0.5
TARGET_REDRAW_MS = 15.0
TARGET_IDLE_CPU_PCT = 1.0
TERMINAL = (160, 48)  # columns, rows: a laptop terminal, the dashboard's three charts side by side
ALT_SCREEN = b"\x1b[?1049h"
# the app's worker groups that never end
LONG_LIVED = frozenset({"poll", "lifecycle", "live", "gpu"})


@dataclass
class TuiBenchResult:
    first_frame_s: float
    redraw_ms_median: float
    redraw_ms_p95: float
    idle_cpu_pct: float
    idle_cpu_pct_still: float  # the same window with no new data: the app's own loops
    points: int
    redraws: int
    chart_size: tuple[int, int]
    idle_seconds: float
    terminal: tuple[int, int] = TERMINAL
    targets: dict[str, float] = field(
        default_factory=lambda: {
            "first_frame_s": TARGET_FIRST_FRAME_S,
            "redraw_ms": TARGET_REDRAW_MS,
            "idle_cpu_pct": TARGET_IDLE_CPU_PCT,
        }
    )

    @property
    def checks(self) -> dict[str, bool]:
        return {
            "first_frame_s": self.first_frame_s <= TARGET_FIRST_FRAME_S,
            "redraw_ms": self.redraw_ms_median <= TARGET_REDRAW_MS,
            "idle_cpu_pct": self.idle_cpu_pct <= TARGET_IDLE_CPU_PCT,
        }

    @property
    def ok(self) -> bool:
        return all(self.checks.values())

    def as_dict(self) -> dict:
        return {**asdict(self), "checks": self.checks, "ok": self.ok}

    def table(self) -> str:
        def mark(key: str) -> str:
            return "ok" if self.checks[key] else "MISSED"

        cols, rows = self.terminal
        width, height = self.chart_size
        return "\n".join(
            [
                f"specconsole bench tui ({cols}x{rows} terminal; "
                "CPU shared with whatever else runs)",
                f"  first frame   {self.first_frame_s * 1000:7.0f} ms   target <= "
                f"{TARGET_FIRST_FRAME_S * 1000:.0f} ms   {mark('first_frame_s')}"
                "   (spawn `connect` in a pty -> first full paint)",
                f"  chart redraw  {self.redraw_ms_median:7.1f} ms   target <= "
                f"{TARGET_REDRAW_MS:.0f} ms     {mark('redraw_ms')}"
                f"   (median of {self.redraws}, p95 {self.redraw_ms_p95:.1f} ms; "
                f"{self.points} points, {width}x{height} cells)",
                f"  idle CPU      {self.idle_cpu_pct:7.2f} %    target <= "
                f"{TARGET_IDLE_CPU_PCT:.0f} %       {mark('idle_cpu_pct')}"
                f"   (of one core, {self.idle_seconds:.0f} s, "
                "dashboard with live charts, headless)",
                f"  idle CPU      {self.idle_cpu_pct_still:7.2f} %    (for comparison: the same, "
                "charts holding still)",
                *_bytecode_note(),
            ]
        )


def _bytecode_note() -> list[str]:
    """A line when Python writes no bytecode: every start then compiles the console's
    sources again, a good part of the first frame an installed console does not pay."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return []
    return ["  note: PYTHONDONTWRITEBYTECODE is set, so the first frame includes compiling "
            "the console's sources"]  # fmt: skip


# -- first frame ------------------------------------------------------------------------


def first_frame_seconds(
    argv: list[str], env: dict[str, str], size: tuple[int, int] = TERMINAL, timeout: float = 60
) -> float:
    """Seconds from spawning `argv` on a pty to its first paint of the terminal's last row."""
    cols, rows = size
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    bottom_row = f"\x1b[{rows};1H".encode()
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    out = bytearray()
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if chunk:
                    out += chunk
                    alt = out.find(ALT_SCREEN)
                    if alt >= 0 and out.find(bottom_row, alt) >= 0:
                        return time.perf_counter() - start
                    continue
            if proc.poll() is not None:
                text = out.decode("utf-8", "replace").strip().splitlines()
                raise ConsoleError(
                    f"`{' '.join(argv[1:])}` exited ({proc.returncode}) before drawing a frame"
                    + (f": {text[-1]}" if text else ".")
                )
        raise ConsoleError(f"`{' '.join(argv[1:])}` drew no full frame in {timeout:.0f} s.")
    finally:
        _end(proc)
        os.close(master)


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# -- in-app figures ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _config_dir(path: Path) -> Iterator[None]:
    """Point the console's config dir at a throwaway one while the app runs in process."""
    old = os.environ.get("SPECCONSOLE_CONFIG_DIR")
    os.environ["SPECCONSOLE_CONFIG_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SPECCONSOLE_CONFIG_DIR", None)
        else:
            os.environ["SPECCONSOLE_CONFIG_DIR"] = old


def _samples(n: int, t0: float) -> list:
    """A plausible live series: tok/s, commit length and step time drifting with context."""
    from console.analysis.records import LiveSample

    out = []
    for i in range(n):
        commit = 4.0 + 1.5 * math.sin(i / 17.0)
        step = 0.030 + 0.00002 * (i % 300)
        out.append(
            LiveSample(
                t=t0 + i,
                source="log",
                tok_s=commit / step,
                commit_len=commit,
                step_time_s=step,
                context_tokens=200 + 5 * (i % 300),
            )
        )
    return out


async def in_app_figures(
    work: Path, *, points: int, idle_seconds: float, redraws: int = 40
) -> tuple[list[float], tuple[int, int], float, float]:
    """(redraw times in ms, chart size, idle CPU % with live charts, and without) from the
    real app run headless."""
    from textual.geometry import Region

    from console.config import HostProfile, LaunchProfile
    from console.service import EngineService
    from console.tui.app import SpecConsoleApp
    from console.tui.screens.dashboard import DashboardScreen, chart_series
    from console.tui.settings import TuiSettings
    from console.tui.widgets.chart import Chart

    profile = HostProfile(
        name="bench",
        port=_free_port(),  # nothing listens there: the engine is stopped
        state_dir=str(work / "state"),
        launch=LaunchProfile(python=sys.executable),
    )
    # The app holds the opened service for its whole run and closes its session on exit.
    opened = EngineService.open(profile)
    app = SpecConsoleApp("bench", settings=TuiSettings(), service=opened.service)
    cols, rows = TERMINAL
    async with app.run_test(size=(cols, rows)) as pilot:
        deadline = time.monotonic() + 60
        while not isinstance(app.screen, DashboardScreen):
            if time.monotonic() > deadline:
                raise ConsoleError("The dashboard did not open within 60 s.")
            await pilot.pause(0.05)
        # Let the one-off start-up reads (flags, schema, server info) finish first; the
        # long-lived loops (status poll, lifecycle, live series) are part of idle.
        settle = time.monotonic() + 30
        while any(not w.is_finished and w.group not in LONG_LIVED for w in app.workers):
            if time.monotonic() > settle:
                break
            await pilot.pause(0.1)
        t0 = time.time() - points
        history = _samples(points + redraws + 1, t0)
        app.ingest_live(samples=history[:points])
        await pilot.pause(0.6)

        chart = app.screen.query_one("#chart-tok", Chart)
        size = (chart.size.width, chart.size.height)
        crop = Region(0, 0, size[0], size[1])
        times: list[float] = []
        for i in range(1, redraws + 1):
            lines = chart_series(history[i : i + points])["tok"]
            start = time.perf_counter()
            chart.set_series(lines)
            chart._flush()  # draw now what a burst's trailing timer would draw
            chart.render_lines(crop)
            times.append((time.perf_counter() - start) * 1000)
        await pilot.pause(0.5)

        # Idle, no input: first with the charts holding still (the app's own loops only),
        # then with one live sample a second, as the live series delivers them.
        still = await _cpu_percent(idle_seconds)
        feed = iter(_samples(10_000, t0 + points))
        timer = app.set_interval(1.0, lambda: app.ingest_live(samples=[next(feed)]))
        await pilot.pause(1.0)
        live = await _cpu_percent(idle_seconds)
        timer.stop()
        await app.action_quit_console()
    return times, size, live, still


async def _cpu_percent(seconds: float) -> float:
    """This process's CPU time over a wall-clock window, as % of one core."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    return 100.0 * (time.process_time() - cpu0) / (time.perf_counter() - wall0)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


async def run(*, idle_seconds: float = 5.0, points: int = 600) -> TuiBenchResult:
    if points < 2 or idle_seconds <= 0:
        raise ConsoleError("--points must be at least 2 and --idle-seconds above 0.")
    with tempfile.TemporaryDirectory(prefix="specconsole-bench-") as tmp:
        work = Path(tmp)
        (work / "config").mkdir()
        env = {
            **os.environ,
            "SPECCONSOLE_CONFIG_DIR": str(work / "config"),
            "TERM": "xterm-256color",
        }
        for var in ("COLUMNS", "LINES", "TEXTUAL_DRIVER"):
            env.pop(var, None)
        argv = [sys.executable, "-m", "console.cli", "connect"]
        first = await asyncio.to_thread(first_frame_seconds, argv, env)
        with _config_dir(work / "config"):
            times, size, idle, still = await in_app_figures(
                work, points=points, idle_seconds=idle_seconds
            )
    return TuiBenchResult(
        first_frame_s=first,
        redraw_ms_median=statistics.median(times),
        redraw_ms_p95=_percentile(times, 0.95),
        idle_cpu_pct=idle,
        idle_cpu_pct_still=still,
        points=points,
        redraws=len(times),
        chart_size=size,
        idle_seconds=idle_seconds,
    )
