"""Redraw the documentation's pictures: the console's own SVG screenshots.

    python scripts/screenshots.py [--out docs/img]

The app draws them itself (Textual's `save_screenshot`), driven by a pilot on the TUI
tests' fixed data (tests/console/tui/fakes.py): no engine, no clock, no pid, so a rerun
on an unchanged console redraws the same pictures. The figures in them are those
fixtures', not a measurement of this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"
SIZE = (120, 36)
VERDICT_SIZE = (150, 48)


def _isolate(home: Path) -> None:
    # The pictures must not show this user's profiles, keys, theme or run history.
    os.environ["HOME"] = str(home)
    os.environ["SPECCONSOLE_CONFIG_DIR"] = str(home / "config")
    os.environ["SPECCONSOLE_DATA_DIR"] = str(home / "data")
    os.environ["TZ"] = "UTC"


def _steady() -> None:
    """Pin what would make two drawings of one screen differ."""
    from textual.widgets import Input

    from console.tui.screens import dashboard
    from tests.console.tui import fakes

    Input._toggle_cursor = lambda self: None  # type: ignore[method-assign]
    # the dashboard shows how old its newest sample is: 7 s, whenever it is drawn
    dashboard.wall_clock = lambda: fakes.T0 + 125.0


def _app():
    from console.tui.app import SpecConsoleApp
    from console.tui.settings import TuiSettings
    from tests.console.tui import fakes

    service = fakes.FakeService()
    app = SpecConsoleApp("gpu1", settings=TuiSettings(theme="dark"), service=service,
                         poll=False, live=False)  # fmt: skip
    return app, service


async def _ready(pilot, service, samples: bool) -> None:
    from tests.console.tui import fakes

    app = pilot.app
    app.status = await service.status()
    app.server_info = await service.server_info()
    if samples:
        app.ingest_live(fakes.live_samples(), fakes.requests())
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause(0.6)  # one chart redraw tick


async def dashboard(out: Path) -> Path:
    app, service = _app()
    async with app.run_test(size=SIZE) as pilot:
        await _ready(pilot, service, samples=True)
        return Path(app.save_screenshot("dashboard.svg", str(out)))


def repeated_sweep() -> list:
    """The fixtures' context sweep read three times, step time 3% apart between reads: a
    point with several requests gives typed figures a noise to carry, as a real sweep does."""
    from tests.console.tui import fakes

    out = []
    for read, spread in enumerate((0.97, 1.0, 1.03)):
        for s in fakes.sweep_samples():
            step = s.step_time_s * spread
            passage = s.prompt_id.replace("#0", f"#{read}")
            out.append(replace(s, prompt_id=passage, step_time_s=step, t=fakes.T0 + read,
                               decode_tok_s=s.commit_len / step,
                               decode_time_s=s.decode_time_s * spread))  # fmt: skip
    return out


def one_read_sweep() -> list:
    from tests.console.tui import fakes

    return fakes.sweep_samples()


# Each verdict picture: the sweep it is fitted to, and what is typed into the verdict form.
VERDICTS = {
    # the field reports' question: code at 64 tokens, then prose at 1024, 58% slower
    "verdict-physics.svg": (repeated_sweep, {"observed": "71", "context": "1024",
        "text": "prose", "baseline": "170", "baseline-context": "64", "baseline-text": "code"}),
    # the same text and contexts, 29% slower than context alone explains
    "verdict-not-physics.svg": (repeated_sweep, {"observed": "50", "context": "1024",
        "text": "prose", "baseline": "114", "baseline-context": "64", "baseline-text": "prose"}),
    # one request per sweep point and no calibration: no noise to judge by
    "verdict-not-enough.svg": (one_read_sweep, {"observed": "40", "context": "1024",
        "text": "prose", "baseline": "138", "baseline-context": "64"}),
}  # fmt: skip


# What each picture is called, in the order they are drawn; tests/test_docs.py checks
# that every one exists and that the docs show it.
PICTURES = ("dashboard.svg", *VERDICTS)


async def verdict(out: Path, name: str) -> Path:
    """The Sweeps view with a fitted context sweep and the verdict on typed figures."""
    from console.analysis.decompose import fit
    from console.analysis.stats import summarize

    sweep, typed = VERDICTS[name]
    samples = sweep()
    app, service = _app()
    async with app.run_test(size=VERDICT_SIZE) as pilot:
        await _ready(pilot, service, samples=False)
        await pilot.press("w")
        await pilot.pause()
        await app.workers.wait_for_complete()
        screen = app.screen
        screen._show_points(summarize(samples), "context")
        screen._set_model(fit(samples), "fixed samples", samples)
        for field, value in typed.items():
            screen.query_one(f"#v-{field}").value = value
        await pilot.press("ctrl+t")
        await pilot.pause(0.6)
        await app.workers.wait_for_complete()
        return Path(app.save_screenshot(name, str(out)))


async def draw(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [await dashboard(out)] + [await verdict(out, name) for name in VERDICTS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the SVGs")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    sys.path.insert(0, str(ROOT))  # the fixtures live in tests/
    with tempfile.TemporaryDirectory(prefix="specconsole-shots-") as home:
        _isolate(Path(home))
        _steady()
        for path in asyncio.run(draw(out)):
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
