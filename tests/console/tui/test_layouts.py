"""Every view but the dashboard at the three designed sizes: 80x24 (as htop is),
100x30 and 160x48, with fixed data (tests/console/tui/views.py).

What to look for when updating (`--snapshot-update`, then open the SVGs): the view's
main content is there, no figure is cut (128/128, step ms ranges, flag values), text cut
for room ends in an ellipsis, and the footer shows `? Keys` and `q Quit`.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_textual_snapshot")

from tests.console.tui import views


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch):
    import time
    from pathlib import Path

    # The Keys screen names the settings file: one fixed path, not this test's temp dir.
    monkeypatch.setattr(
        "console.tui.screens.keys.settings_path", lambda: Path("~/.config/specconsole/tui.toml")
    )
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# The narrowest and the widest stay in the fast tier; the middle size runs in the slow one
# (CI runs both), so the fast tier keeps within its 4 minutes.
SIZE_PARAMS = [
    pytest.param(size, id=f"{size[0]}x{size[1]}",
                 marks=() if size in (views.SIZES[0], views.SIZES[-1]) else pytest.mark.slow)
    for size in views.SIZES
]  # fmt: skip


@pytest.mark.parametrize("size", SIZE_PARAMS)
@pytest.mark.parametrize("view", views.VIEWS)
def test_view_layout(snap_compare, view: str, size: tuple[int, int]) -> None:
    app, run_before = views.scenario(view)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZE_PARAMS)
@pytest.mark.parametrize("view", views.VIEWS)
def test_footer_shows_help_and_quit(view: str, size: tuple[int, int]) -> None:
    import asyncio

    app, run_before = views.scenario(view)

    async def check() -> None:
        async with app.run_test(size=size) as pilot:
            await run_before(pilot)
            lines = [strip.text for strip in app.screen._compositor.render_strips()]
            if view == "keys":
                return  # a modal: its own close keys are on it
            assert "? Keys" in lines[-1] and "q Quit" in lines[-1], lines[-1]

    asyncio.run(check())


def test_the_empty_points_table_keeps_its_header_in_the_wide_layout() -> None:
    # Side by side with the verdict, the points table fits its rows; before the first
    # sweep it has none and collapsed to its border (2 columns) at 160x48.
    import asyncio

    app, _run_before = views.scenario("dashboard")

    async def check() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await views.ready(pilot, app.service)  # type: ignore[arg-type]
            await pilot.press("w")
            await views.settle(pilot)
            table = app.screen.query_one("#sweep-points")
            header = sum(column.get_render_width(table) for column in table.columns.values())
            assert table.region.width >= header, (table.region.width, header)

    asyncio.run(check())
