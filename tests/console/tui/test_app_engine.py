"""The console against the real engine through `local` (bundled weights, a free port, a
temp state dir, no warm-up): start from the app and see ready, change a flag through the
flags form and see it in /get_server_info, survive a flag that kills the engine (exit
code and log lines on screen) and roll back, quit and find the service still running.

One engine session for all of it: each start costs seconds on two cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from console.config import BaselineProfile, HostProfile, LaunchProfile, load_profile, save_profile
from console.errors import FlagError
from console.service import EngineService
from console.transport import open_transport
from console.tui.app import SpecConsoleApp
from console.tui.screens.flags import FlagsScreen
from console.tui.screens.modals import ConfirmScreen, InfoScreen
from console.tui.screens.service import ServiceScreen
from console.tui.settings import TuiSettings
from tests.console.tui.pilot import stage_flag, until
from tests.ports import free_port

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

WINDOW = "speculative-draft-window-size"
DRAFT = "speculative-draft-model-path"
BUDGET = "speculative-ddtree-budget"


wait_for = until  # the other engine-backed TUI tests import it from here


def text(app: SpecConsoleApp, selector: str) -> str:
    """What a Static on the current screen shows, "" before it exists."""
    try:
        return str(app.screen.query_one(selector).render())
    except Exception:
        return ""


def state(app: SpecConsoleApp) -> str | None:
    return app.status.state if app.status is not None else None


async def set_flag(pilot, name: str, value: str, *, baseline: bool = False) -> None:
    """Through the form: search, select, type, Enter (stage), a (review), y (apply)."""
    app = pilot.app
    screen = await stage_flag(pilot, name, value)
    screen.query_one("#flag-baseline").value = baseline
    # 32-token requests: the flow, not the default points (the CLI's --baseline-output);
    # blank otherwise, as an override on its own implies a baseline, as on the CLI
    screen.query_one("#bl-output").value = "32" if baseline else ""
    await pilot.press("a")
    await wait_for(pilot, "the diff", lambda: isinstance(app.screen, ConfirmScreen))
    assert f"+--{name} {value}" in app.screen.detail
    await pilot.press("y")


@pytest.fixture
def local_profile(tmp_path: Path) -> HostProfile:
    profile = HostProfile(
        name="local",
        engine="builtin",
        launch=LaunchProfile(python=sys.executable),
        port=free_port(),
        state_dir=str(tmp_path / "state"),
        flags={"skip-server-warmup": True},
        # The before/after this test reads needs both text types, not the default long
        # context: one short context keeps the real-engine baseline to seconds.
        baseline=BaselineProfile(contexts=[256], output=48, repeat=2),
    )
    save_profile(profile)  # overrides the built-in `local` in the isolated config dir
    return profile


async def test_start_apply_fail_rollback_quit(local_profile: HostProfile) -> None:
    app = SpecConsoleApp("local", settings=TuiSettings(status_poll_s=0.5), live=False)
    try:
        async with app.run_test(size=(130, 42)) as pilot:
            await wait_for(pilot, "the first status", lambda: state(app) == "stopped", 60)
            await wait_for(pilot, "the start hint", lambda: "Press S" in text(app, "#state-hint"))
            # The lifecycle log opens with the state found (before, it opened empty).
            assert app.events.lines[0].endswith("stopped when the console opened"), app.events.lines

            # One key starts it; the lifecycle is followed to ready.
            seen: list[str] = []
            app.watch(app, "lifecycle", lambda e: e and seen.append(e.state), init=False)
            await pilot.press("S")
            await wait_for(pilot, "ready", lambda: state(app) == "ready" and not app.running)
            assert seen[0] == "starting" and "ready" in seen
            # Again: nothing to start, in the CLI's words (`specconsole start` exits 0).
            pid = app.status.pid
            await pilot.press("S")
            said = f"local: already running (pid {pid}), ready: nothing to start."
            notes = lambda: [n.message for n in app._notifications]  # noqa: E731
            await wait_for(pilot, "nothing to start", lambda: said in notes() and not app.running)
            assert app.status.pid == pid

            # A bad value is refused as you type, with the CLI's sentence.
            await pilot.press("f")
            await wait_for(pilot, "the flags form", lambda: isinstance(app.screen, FlagsScreen))
            screen = app.screen
            await wait_for(pilot, "the schema", lambda: WINDOW in screen.specs)
            await pilot.press("slash", *WINDOW, "enter", "enter", *"sixteen")
            with pytest.raises(FlagError) as refused:  # what `specconsole set` would say
                await app.service.plan({WINDOW: "sixteen"})
            await wait_for(
                pilot, "the check", lambda: str(refused.value) in text(app, "#flag-check")
            )
            assert text(app, "#flag-check").startswith("✗") and screen.staged == {}

            # A good one through the form: diff, apply, restart, ready, served.
            await set_flag(pilot, WINDOW, "16")
            await wait_for(pilot, "apply", lambda: not app.running and state(app) == "ready")
            await wait_for(pilot, "server info", lambda: app.server_info is not None)
            assert app.server_info["speculative_draft_window_size"] == 16

            # The tuning loop: the same baseline before and after, lined up on screen.
            await set_flag(pilot, BUDGET, "4", baseline=True)
            await wait_for(pilot, "the comparison", lambda: isinstance(app.screen, InfoScreen), 240)
            table = app.screen.body
            assert "which factor moved" in table and "\ncode " in table and "\nprose " in table
            await pilot.press("enter")
            await wait_for(pilot, "apply", lambda: not app.running and state(app) == "ready")
            runs = await app.run_store().runs(method="context-sweep")
            assert len(runs) >= 2 and runs[0].info.flags.get(BUDGET) in (4, "4")

            # A flag that kills the engine: failed, exit code and log lines on screen.
            await set_flag(pilot, DRAFT, "/nonexistent/drafter")
            await wait_for(pilot, "the failure", lambda: not app.running and state(app) == "failed")
            await wait_for(pilot, "service view", lambda: isinstance(app.screen, ServiceScreen))
            head = str(app.screen.query_one("#failure-head").render())
            assert "exit code" in head and "exit code unknown" not in head
            log = app.screen.query_one("#failure-log")
            assert any("/nonexistent/drafter" in line for line in log.kept)
            # each shown whole, or cut with "…" where the panel is narrower
            for kept, shown in zip(log.kept, log.lines, strict=False):
                assert shown.text.rstrip() == kept or shown.text.rstrip().endswith("…")

            # Rollback: the diff is shown, then the last good flags come back up.
            await pilot.press("B")
            await wait_for(pilot, "rollback diff", lambda: isinstance(app.screen, ConfirmScreen))
            assert "/nonexistent/drafter" in app.screen.detail
            await pilot.press("y")
            await wait_for(pilot, "rolled back", lambda: not app.running and state(app) == "ready")
            await wait_for(pilot, "server info", lambda: app.server_info is not None)
            assert app.server_info[DRAFT.replace("-", "_")] != "/nonexistent/drafter"
            assert app.server_info["speculative_draft_window_size"] == 16
            pid = app.status.pid

            await pilot.press("q")
        # Quitting left the service running.
        await _check_still_running(pid)
    finally:
        await _stop_local()


async def _check_still_running(pid: int | None) -> None:
    profile = load_profile("local")
    transport = open_transport(profile)
    try:
        st = await EngineService(profile, transport).status()
        assert st.state == "ready" and st.pid == pid
    finally:
        await transport.close()


async def _stop_local() -> None:
    profile = load_profile("local")
    transport = open_transport(profile)
    try:
        await EngineService(profile, transport).stop(timeout=10)
    finally:
        await transport.close()
