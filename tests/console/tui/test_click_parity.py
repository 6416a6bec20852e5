"""Every button does what its key does: the same requests reach the app, the same screen
opens, the same notification shows, the same panel changes.

Each case runs twice on a fresh app over the fixed service (fakes.py): once pressing the
key, once clicking the button, and compares what came of it. A button whose handler
never ran its action (History's Compare, Explain, CSV and JSON did that: the handler
called a coroutine without awaiting it) shows an empty effect against a full one. The
real engine behind these actions is covered by test_app_engine.py and the browser tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.message import Message
from textual.widgets._footer import FooterKey

from console.tui.messages import Request
from console.tui.screens.keys import KeysScreen
from console.tui.screens.views_menu import ViewsScreen
from tests.console.tui import fakes, views

# (view key, what to do first: keys, or "stage" an edit; button id, the key it stands for)
CASES = [
    ("h", ("down",), "#hist-mark-button", "space"),
    ("h", ("space", "down", "space"), "#hist-compare-button", "c"),
    ("h", ("space", "down", "space"), "#hist-explain-button", "v"),
    ("h", (), "#hist-csv-button", "E"),
    ("h", ("space", "down", "space"), "#hist-json-button", "J"),
    # (Start is disabled while the engine is ready, as S then only says so.)
    ("s", (), "#svc-restart", "R"),
    ("s", (), "#svc-stop", "X"),
    ("s", (), "#svc-rollback", "B"),
    ("p", (), "#lab-run", "ctrl+r"),
    ("w", (), "#sweep-run-button", "ctrl+r"),
    ("w", (), "#sweep-live-button", "ctrl+l"),
    ("f", "stage", "#flag-apply-button", "a"),
    ("f", "stage", "#flag-discard-button", "z"),
]


def _panel_titles(app) -> tuple[str, ...]:
    return tuple(str(w.border_title) for w in app.screen.query(".panel") if w.border_title)


async def _effect(tmp_path: Path, view: str, setup: tuple[str, ...] | str, do) -> tuple:
    posted: list[str] = []

    def hook(message: Message) -> None:
        # RunAction is how a button reaches the app's action that a key runs directly.
        if isinstance(message, Request) and type(message).__name__ != "RunAction":
            posted.append(type(message).__name__)

    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        await views.ready(pilot, service)
        await pilot.press(view)
        await views.settle(pilot)
        if view == "w":
            app.ingest_live(samples=fakes.live_samples())
        if setup == "stage":  # a staged edit (the fixed service validates nothing)
            app.screen.staged = {"context-length": "4096"}
            app.screen._fill_table()
        else:
            await pilot.press(*setup)
        await views.settle(pilot)
        before = (list(posted), _panel_titles(app), len(app._notifications))
        screen = type(app.screen).__name__
        await do(pilot)
        await views.settle(pilot)
        # The export names the directory it wrote to: each run has its own.
        notes = [n.message.replace(str(tmp_path), "DIR")
                 for n in list(app._notifications)[before[2]:]]  # fmt: skip
        return (
            posted[len(before[0]) :],
            type(app.screen).__name__ if type(app.screen).__name__ != screen else "",
            notes,
            _panel_titles(app) if _panel_titles(app) != before[1] else (),
            sorted(p.name for p in tmp_path.glob("specconsole-runs-*")),
            list(getattr(app.screen, "marked", ())),  # History's marked runs
        )


# Two buttons stay in the fast tier; the rest run in the slow one (CI runs both).
FAST = {"#svc-restart", "#lab-run"}  # the fast tier's budget holds two (about 5 s each)
PARAMS = [pytest.param(*c, id=c[2], marks=() if c[2] in FAST else pytest.mark.slow)
          for c in CASES]  # fmt: skip


@pytest.mark.parametrize(("view", "setup", "button", "key"), PARAMS)
async def test_each_button_does_what_its_key_does(
    view: str, setup: tuple[str, ...] | str, button: str, key: str, tmp_path: Path, monkeypatch
) -> None:
    if view == "h":
        await views.store_history()
    by_key_dir = tmp_path / "key"
    by_click_dir = tmp_path / "click"
    by_key_dir.mkdir()
    by_click_dir.mkdir()
    monkeypatch.chdir(by_key_dir)

    async def press(pilot) -> None:
        await pilot.press(key)

    async def click(pilot) -> None:
        assert await pilot.click(button), f"{button} was not clickable"

    by_key = await _effect(by_key_dir, view, setup, press)
    monkeypatch.chdir(by_click_dir)
    by_click = await _effect(by_click_dir, view, setup, click)
    assert any(by_key), f"the key {key} did nothing: {by_key}"
    assert by_click == by_key


async def test_keys_screen_closes_by_a_click() -> None:
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)
        await pilot.click("#keys-close")
        await pilot.pause()
        assert not isinstance(app.screen, KeysScreen)


@pytest.mark.parametrize(
    "width",
    [80] + [pytest.param(w, marks=pytest.mark.slow) for w in (100, 142, 160)],
)
async def test_footer_reaches_every_view_by_a_click(width: int) -> None:
    """At each width from 80, each view's footer has every view key, or `g Views`,
    whose menu switches to any view by a click."""
    service = fakes.FakeService()
    app = views.app_for(service)
    view_keys = set("dslfpwh")
    async with app.run_test(size=(width, 30)) as pilot:
        await views.ready(pilot, service)
        for view, target in zip("dslfpwh", "hdwpslf", strict=True):
            await pilot.press(view)
            await views.settle(pilot)
            footer = {k.key: k for k in app.screen.query(FooterKey)}
            if view_keys <= set(footer):
                continue
            assert "g" in footer, f"{view} at {width} columns: {sorted(footer)}"
            await pilot.click(footer["g"])
            await pilot.pause()
            assert isinstance(app.screen, ViewsScreen)
            mode = {"d": "dashboard", "s": "service", "l": "logs", "f": "flags",
                    "p": "prompt", "w": "sweeps", "h": "history"}[target]  # fmt: skip
            await pilot.click(f"#views-{mode}")
            await pilot.pause()
            assert app.current_mode == mode, (view, width)


@pytest.mark.parametrize("width", [80, 160])
async def test_a_focused_text_field_keeps_a_views_entry_that_a_click_opens(width: int) -> None:
    """A text field takes every printable key, the view keys and `g` with them, so
    Textual's footer offered no view at all while one was focused. The footer keeps a
    `Views` entry with no key shown; a click opens the menu and types nothing."""
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(width, 30)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("w")
        await views.settle(pilot)
        field = app.screen.query_one("#sweep-contexts")
        field.focus()
        before = field.value
        await views.settle(pilot)
        keys = list(app.screen.query(FooterKey))
        entry = next((k for k in keys if k.action == "app.views"), None)
        assert entry is not None, [k.description for k in keys]
        assert entry.key_display == "" and not any(k.key in set("dslfpwh") for k in keys)
        await pilot.click(entry)
        await pilot.pause()
        assert isinstance(app.screen, ViewsScreen) and field.value == before
        await pilot.click("#views-history")
        await pilot.pause()
        assert app.current_mode == "history"


async def test_the_views_menu_takes_the_view_key_each_button_shows() -> None:
    """The menu's buttons read `h  History`: pressing h there opens History (the modal
    keeps the app's view keys from it, so it did nothing before)."""
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, ViewsScreen)
        await pilot.press("h")
        await pilot.pause()
        assert app.current_mode == "history" and not isinstance(app.screen, ViewsScreen)
