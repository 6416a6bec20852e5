"""Driving the console through Textual's Pilot, shared by the TUI tests and the lease
stress test's TUI apply (`tests/console/service/tui_apply.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from console.tui.screens.flags import FlagsScreen


class Stuck(AssertionError):
    """The TUI did not reach a step in time (an AssertionError, so a test reads it as one)."""


async def until(
    pilot, what: str, check: Callable[[], bool], timeout: float = 120, step: float = 0.1
) -> None:
    """Wait for `check()`, pausing the app between looks; `Stuck` names `what` and the
    app's notifications, which usually say why it never came."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            notes = [n.message for n in pilot.app._notifications]
            raise Stuck(f"timed out waiting for {what}; notifications: {notes}")
        await pilot.pause(step)


async def stage_flag(pilot, name: str, value: str) -> FlagsScreen:
    """The Flags view, `name` searched and selected, `value` typed and staged (Enter)."""
    app = pilot.app
    await pilot.press("f")
    await until(pilot, "the flags form", lambda: isinstance(app.screen, FlagsScreen))
    screen = app.screen
    await until(pilot, "the schema", lambda: name in screen.specs)
    await pilot.press("slash", *name, "enter")
    await until(pilot, f"{name} selected", lambda: screen.selected == name)
    await pilot.press("enter")  # to the value box
    screen.query_one("#flag-value").value = ""
    await pilot.press(*value, "enter")
    await until(pilot, f"{name} staged", lambda: screen.staged.get(name) == value)
    return screen
