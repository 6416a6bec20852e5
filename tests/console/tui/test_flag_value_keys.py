"""The Flags view's value box keeps what is typed into it, whatever the screen does
meanwhile (pilot, fixed data). The tmux test in test_terminal.py types the same under
load through a real terminal.

Two ways it lost keys: a table refill (a resize, a new status, the engine ready)
highlighted the first row and then the selected one again, and each highlight loaded
that flag's value into the box over the typing; and a click on a row then on the box,
with typing at once, reached the box before the screen handled the row's highlight,
which then loaded the flag's current value over what had been typed for it.
"""

from __future__ import annotations

from textual.widgets import Input

from tests.console.tui import fakes, views


async def _flags(pilot, service) -> None:
    await views.ready(pilot, service)
    await pilot.press("f")
    await views.settle(pilot)


async def test_a_table_refill_or_resize_while_typing_keeps_every_key() -> None:
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(160, 48)) as pilot:
        await _flags(pilot, service)
        screen = app.screen
        await pilot.press("down", "down", "down", "enter")  # a flag below the first
        await pilot.pause()
        box = screen.query_one("#flag-value", Input)
        assert box.has_focus
        selected = screen.selected
        await pilot.press(*"64,512")  # over the selected current value
        screen._fill_table()  # what a new status or the engine becoming ready does
        await pilot.press(*",1024")
        await pilot.resize_terminal(130, 40)  # the table rebuilt at a new width
        await pilot.pause()
        await pilot.press(*",1900")
        await pilot.pause(0.3)
        assert box.value == "64,512,1024,1900"
        assert screen.selected == selected


async def test_a_highlight_handled_after_typing_loads_nothing_over_it() -> None:
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(160, 48)) as pilot:
        await _flags(pilot, service)
        screen = app.screen
        box = screen.query_one("#flag-value", Input)
        box.focus()
        await pilot.pause()
        await pilot.press("ctrl+u", *"qwen3")
        screen._select("reasoning-parser")  # the row's highlight, handled late
        await pilot.pause(0.3)
        assert screen.selected == "reasoning-parser" and box.value == "qwen3"
        # Untouched, the box does load the highlighted flag's value.
        screen.query_one("#flag-table").focus()
        await pilot.pause()
        screen._select("port")
        await pilot.pause()
        assert box.value == "30000"


async def test_a_rebuild_says_only_where_the_cursor_ends() -> None:
    # DataTable highlights the first row it adds after a clear; a FittedTable rebuild
    # holds that back and posts one highlight, of the row the cursor ends on.
    from textual.app import App
    from textual.widgets import DataTable

    from console.tui.widgets.fitted_table import Col, FittedTable

    seen: list[str] = []

    class One(App):
        def compose(self):
            yield FittedTable((Col("name", flex=True), Col("n")), cursor_type="row")

        def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
            seen.append(str(event.row_key.value))

    app = One()
    async with app.run_test(size=(60, 12)) as pilot:
        table = app.query_one(FittedTable)
        rows = [((f"row{i}", str(i)), f"row{i}") for i in range(5)]
        table.set_rows(rows)
        table.move_cursor(row=3)
        await pilot.pause()
        seen.clear()
        table.set_rows(rows)  # a refill
        await pilot.resize_terminal(50, 12)  # and a resize
        await pilot.pause()
        assert seen and set(seen) == {"row3"}, seen
