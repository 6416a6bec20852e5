"""The session's sampling dialog (key M, or the palette): what the TUI's measurements run at,
set as `--temperature/--top-p/--top-k/--seed` set it for one command. A value the command
line refuses is refused in one sentence with nothing changed; Apply changes this session
only, and the experiments that open their own measurement session read it from the
service's profile copy. Pilot, fake service, clicks as well as keys."""

from __future__ import annotations

import pytest

from console.backends.request import RequestSpec
from console.sampling import GREEDY
from console.tui.app import SpecConsoleApp
from console.tui.screens.dashboard import DashboardScreen
from console.tui.screens.sampling import SamplingScreen
from tests.console.tui import fakes
from tests.console.tui.pilot import until


async def _open(pilot, app: SpecConsoleApp, via_palette: bool) -> SamplingScreen:
    await until(pilot, "dashboard", lambda: isinstance(app.screen, DashboardScreen), 5.0)
    if via_palette:
        await pilot.press("colon", *"Sampling for this")
        await pilot.pause(0.5)
        await pilot.press("enter")
    else:
        await pilot.press("M")
    await until(pilot, "the dialog", lambda: isinstance(app.screen, SamplingScreen), 5.0)
    return app.screen  # type: ignore[return-value]


@pytest.mark.parametrize("size", [(80, 24), (130, 42)])
async def test_apply_by_click_measures_the_session_at_the_typed_sampling(
    size: tuple[int, int],
) -> None:
    service = fakes.FakeService()
    app = SpecConsoleApp("gpu1", service=service, poll=False, live=False)
    async with app.run_test(size=size) as pilot:
        app.status = fakes.status()
        dialog = await _open(pilot, app, via_palette=size[0] > 100)
        assert dialog.query_one("#sampling-temperature").value == "0"  # the profile's greedy
        dialog.query_one("#sampling-temperature").value = "1"
        dialog.query_one("#sampling-top-p").value = "0.9"
        dialog.query_one("#sampling-seed").value = "7"
        assert await pilot.click("#sampling-apply")
        await until(pilot, "closed", lambda: not isinstance(app.screen, SamplingScreen), 5.0)
        session = app.live.measure_session()
        assert session.sampling.label == "T=1 top-p 0.9 seed 7"
        # what baseline, calibrate and side by side build their own sessions from
        assert service.profile.sampling == session.sampling
        # every request the session sends carries it, seeded per passage and read
        sent = session.sampled(RequestSpec("code", "code@64#0", 16, text="x"), read=0)
        assert sent.sampling == session.sampling and sent.seed is not None


async def test_a_value_the_command_line_refuses_keeps_the_dialog_and_changes_nothing() -> None:
    service = fakes.FakeService()
    app = SpecConsoleApp("gpu1", service=service, poll=False, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.status = fakes.status()
        dialog = await _open(pilot, app, via_palette=False)
        dialog.query_one("#sampling-top-p").value = "1.5"
        assert await pilot.click("#sampling-apply")
        await pilot.pause(0.2)
        assert isinstance(app.screen, SamplingScreen)
        error = str(dialog.query_one("#sampling-error").render())
        assert error.startswith("Sampling top_p:") and "1" in error, error
        dialog.query_one("#sampling-top-p").value = "often"
        await pilot.press("enter")  # Enter in a field applies, as the button does
        await pilot.pause(0.2)
        assert "'often' is not a number" in str(dialog.query_one("#sampling-error").render())
        assert await pilot.click("#sampling-cancel")
        await until(pilot, "closed", lambda: not isinstance(app.screen, SamplingScreen), 5.0)
        assert app.live.measure_session().sampling == GREEDY == service.profile.sampling
