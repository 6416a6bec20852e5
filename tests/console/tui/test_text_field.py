"""A field's editing keys act in the order they were typed (widgets/text_field.py).

A burst of keys posted at once reaches the app as fast typing or a paste does: the app
hands each to the focused field before the field has handled the one before. A plain
Textual Input inserts the printable keys at once but runs its own bindings (ctrl+u,
backspace, the arrows) only after the key has bubbled up to the app, so "ctrl+u 1 9
backspace 0" into "2048,3072" ends empty there (the ctrl+u lands last); the console's
fields must read "10". Every text field the console composes is one of these.
"""

from __future__ import annotations

import asyncio

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Input

from console.tui.widgets.text_field import TextField
from tests.console.tui import views


class _OneField(App):
    def compose(self) -> ComposeResult:
        with Vertical(), Vertical():  # a few widgets for a bound key to bubble through
            yield TextField("2048,3072", id="box")


async def _burst(keys: list[tuple[str, str | None]]) -> str:
    app = _OneField()
    async with app.run_test() as pilot:
        box = app.query_one("#box", Input)
        box.focus()
        box.cursor_position = len(box.value)
        await pilot.pause()
        for key, character in keys:  # all at once, none handled before the next is sent
            app.post_message(events.Key(key, character))
        await pilot.pause(0.3)
        return box.value


def _typed(text: str) -> list[tuple[str, str | None]]:
    return [(c, c) for c in text]


async def test_editing_keys_in_a_burst_act_in_the_order_typed() -> None:
    cleared = [("ctrl+u", None), *_typed("19"), ("backspace", None), *_typed("0")]
    assert await _burst(cleared) == "10"
    # moving the cursor is a bound key too: "home" then "x" puts the x first
    assert await _burst([("home", None), *_typed("x"), ("end", None), *_typed("y")]) == (
        "x2048,3072y"
    )
    # each bound key acts once, not again when it reaches the app
    assert await _burst([("backspace", None)]) == "2048,307"


# The views with text fields (the service and keys views have none).
FIELD_VIEWS = ("logs", "flags", "prompt", "sweeps", "history")


@pytest.mark.parametrize("view", FIELD_VIEWS)
def test_every_text_field_of_every_view_keeps_the_key_order(view: str) -> None:
    app, run_before = views.scenario(view)  # history stores its runs in a loop of its own

    async def check() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await run_before(pilot)
            fields = list(app.screen.query(Input))
            plain = [f.id for f in fields if not isinstance(f, TextField)]
            assert fields and not plain, f"{view}: plain Input fields {plain}"

    asyncio.run(check())
