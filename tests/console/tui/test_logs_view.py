"""The log view: filter and inverse filter over lines already received, pause when the
user scrolls up and resume at the end, a marker at each restart, wrap, save to a file."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from console.service import LifecycleEvent
from console.tui.app import SpecConsoleApp
from console.tui.screens.logs import MARK, LogsScreen
from tests.console.tui import fakes

LINES = [f"line {i} {'Decode batch' if i % 2 else 'GET /health'}" for i in range(200)]


async def _open_logs(pilot) -> LogsScreen:
    await pilot.press("l")
    while not isinstance(pilot.app.screen, LogsScreen) or len(pilot.app.screen.lines) < 200:
        await pilot.pause(0.05)
    return pilot.app.screen


def _shown(screen: LogsScreen) -> list[str]:
    return [strip.text for strip in screen.query_one("#log").lines]


@pytest.mark.slow  # about 10 s of typing and scrolling: the fast tier keeps within 4 min
async def test_filters_pause_marker_wrap_and_save(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = SpecConsoleApp("gpu1", service=fakes.FakeService(log=LINES), poll=False, live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_logs(pilot)
        assert len(_shown(screen)) == 200

        await pilot.press("slash", *"Decode", "enter")
        await pilot.press("exclamation_mark", *r"line 1\d\d", "enter")
        await pilot.pause(0.1)
        shown = _shown(screen)
        assert shown and all("Decode" in s and not re.match(r"line 1\d\d", s) for s in shown)
        assert len(shown) == 50

        # A bad regex is marked and keeps the last good filter.
        await pilot.press("slash", "(", "enter")
        await pilot.pause(0.1)
        assert screen.query_one("#log-filter").has_class("bad-regex")
        assert "bad regex" in str(screen.query_one("#log-state").render())
        await pilot.press("slash", "backspace", "enter")

        # Restart marker survives every filter.
        app.lifecycle = LifecycleEvent("starting", message="starting builtin on gpu1", at=fakes.T0)
        await pilot.pause(0.1)
        assert any(s.startswith(MARK) and "engine starting" in s for s in _shown(screen))

        # Scrolling up pauses following; new lines then do not move the view; G resumes.
        await pilot.press("slash", *["backspace"] * 10, "enter")
        await pilot.press("exclamation_mark", *["backspace"] * 20, "enter")
        log = screen.query_one("#log")
        await pilot.pause(0.1)
        log.focus()
        await pilot.press("pageup")
        await pilot.pause(0.1)
        assert screen.paused
        y = log.scroll_y
        screen.add_line("a new line while paused")
        await pilot.pause(0.1)
        assert log.scroll_y == y
        await pilot.press("G")
        await pilot.pause(0.2)
        assert not screen.paused and log.scroll_y == log.max_scroll_y

        await pilot.press("W")
        await pilot.pause(0.05)
        assert log.wrap

        await pilot.press("E")
        await pilot.pause(0.05)
        saved = list(tmp_path.glob("specconsole-gpu1-*.log"))
        assert len(saved) == 1 and "a new line while paused" in saved[0].read_text()


async def test_a_lost_stream_reconnects() -> None:
    class Dropping(fakes.FakeService):
        calls = 0

        async def logs(self, **_):
            Dropping.calls += 1
            yield f"run {Dropping.calls}"
            if Dropping.calls == 1:
                from console.errors import TransportError

                raise TransportError("link lost")
            await asyncio.Event().wait()

    app = SpecConsoleApp("gpu1", service=Dropping(), poll=False, live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("l")
        for _ in range(60):
            await pilot.pause(0.1)
            if (
                Dropping.calls >= 2
                and isinstance(app.screen, LogsScreen)
                and len(app.screen.lines) >= 3
            ):
                break
        lines = list(app.screen.lines)
        assert lines[0] == "run 1" and "log stream lost" in lines[1] and lines[2] == "run 2"
