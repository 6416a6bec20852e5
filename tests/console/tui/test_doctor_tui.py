"""The console's Doctor entry (palette and key D) runs the CLI's `doctor` on the session's
service and shows its lines: on a real host (`local`, the bundled engine's profile, a
plain http.server holding its port), the screen names the same checks with the same
statuses as `specconsole doctor --json`, the listener's pid included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from console.config import save_profile
from console.service import EngineService
from console.tui.app import SpecConsoleApp
from console.tui.screens.modals import InfoScreen
from console.tui.settings import TuiSettings
from tests.console.doctor.test_doctor_local import _http_server
from tests.console.factories import builtin_profile, run_cli
from tests.console.tui.test_app_engine import wait_for

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("how", ["palette", "key"])
async def test_doctor_in_the_console_shows_what_the_cli_says(how: str, tmp_path: Path) -> None:
    profile = builtin_profile("doc-tui", tmp_path / "state")
    save_profile(profile)
    with _http_server(profile.port) as server:
        cli = json.loads(run_cli("doctor", "doc-tui", "--json").stdout)
        async with EngineService.open(profile) as service:
            app = SpecConsoleApp("doc-tui", settings=TuiSettings(theme="dark"),
                                 service=service, poll=False, live=False)  # fmt: skip
            async with app.run_test(size=(160, 48)) as pilot:
                await pilot.pause()
                keys = ("colon", *"Doctor", "enter") if how == "palette" else ("D",)
                for key in keys:
                    await pilot.press(key)
                    await pilot.pause(0.05 if how == "palette" else 0)
                await wait_for(pilot, "the doctor's report",
                               lambda: isinstance(app.screen, InfoScreen), 120)  # fmt: skip
                body = app.screen.body
                # The status read after the action, and whatever it starts in turn: none
                # may be cut off mid-command when the app closes.
                await wait_for(pilot, "the app's workers",
                               lambda: all(w.is_finished for w in app.workers), 60)  # fmt: skip
                assert app.screen.title_text == "Doctor: doc-tui"
    lines = body.splitlines()
    shown = [line.split()[:2] for line in lines[:-1]]
    assert shown == [[row["status"], row["check"]] for row in cli]
    port = next(line for line in lines if line.split()[1:2] == ["port"])
    assert port.startswith("fail") and f"pid {server.pid}: {sys.executable}" in port
    assert lines[-1].startswith("doc-tui: ") and "1 fail" in lines[-1]
