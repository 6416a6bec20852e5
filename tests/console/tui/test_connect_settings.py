"""The TUI's settings (tui.toml) reach the service it opens: one settings object."""

from __future__ import annotations

from console.tui.app import SpecConsoleApp
from console.tui.settings import TuiSettings


async def test_the_tui_opens_its_host_with_its_own_timings() -> None:
    settings = TuiSettings(command_timeout_s=7.0, ready_timeout_s=42.0)
    app = SpecConsoleApp("local", settings=settings, poll=False, live=False)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):
            if app.service is not None:
                break
            await pilot.pause(0.05)
        assert app.service is not None, app.connect_problem
        assert app.service.settings.command_timeout_s == 7.0
        assert app.service.settings.ready_timeout_s == 42.0
        await app.action_quit_console()
