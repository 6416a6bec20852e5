"""The dashboard's key flags against the real bundled engine (`local`, started from the
app): every key flag the engine has is on screen at 80x24, at 88x33 (`specconsole web`
in an 800x600 browser window) and at 100x30, none below the panel's edge.

Before, at 80x24 the panel held six rows: the engine's seventh key flag (the tool-call
parser) sat below the bottom edge, behind a scrollbar. The fixed data of the snapshot
tests has six key flags, so only the real engine's schema showed it.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from console.service.flag_view import KEY_FLAGS
from console.tui.app import SpecConsoleApp
from console.tui.settings import TuiSettings
from tests.console.tui.test_app_engine import _stop_local, local_profile, state, wait_for

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
__all__ = ["local_profile"]  # the fixture, used by name

SIZES = ((80, 24), (88, 33), (100, 30))


def _screen_lines(app: SpecConsoleApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def test_every_key_flag_is_in_view(local_profile) -> None:
    app = SpecConsoleApp("local", settings=TuiSettings(status_poll_s=0.5), live=False)
    try:
        async with app.run_test(size=SIZES[0]) as pilot:
            await wait_for(pilot, "the first status", lambda: state(app) == "stopped", 60)
            await pilot.press("S")
            await wait_for(pilot, "ready", lambda: state(app) == "ready" and not app.running)
            await wait_for(pilot, "server info", lambda: app.server_info is not None)
            table = app.screen.query_one("#flags-table", DataTable)
            # The bundled engine has every one of the key flags the dashboard names.
            await wait_for(pilot, "the key flags", lambda: table.row_count == len(KEY_FLAGS))
            for size in SIZES:
                await pilot.resize_terminal(*size)
                await pilot.pause(0.3)
                await wait_for(pilot, "the key flags", lambda: table.row_count == len(KEY_FLAGS))
                lines = _screen_lines(app)
                labels = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
                missing = [label for label in labels if not any(label in line for line in lines)]
                assert not missing, f"not in view at {size}: {missing}\n" + "\n".join(lines)
                assert table.max_scroll_y == 0, f"the key flags scroll at {size}"
                assert "q Quit" in lines[-1], lines[-1]  # nothing pushed the footer off
    finally:
        await _stop_local()
