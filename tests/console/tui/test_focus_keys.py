"""The focus rule, cancel, the palette and browser-safe keys, driven with Pilot.

- after a run starts the focus leaves the form, so C cancels instead of typing "6C";
- letter keys work from anywhere but a text field being edited; Escape leaves a field;
- tab, shift+tab and Escape typed in a burst move the focus before the next key lands;
- C during a start stops the engine it launched, and the state says so;
- ctrl+p and `:` both open the palette, which lists the view's runnable actions;
- in a browser the keys the browser takes have letter alternatives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual import events
from textual.command import CommandPalette
from textual.widgets import Input

from console.measure import methods
from console.service import LifecycleEvent
from console.tui import keys
from console.tui.app import SpecConsoleApp
from console.tui.commands import ConsoleCommands
from console.tui.form_memory import load_form
from console.tui.screens.keys import KeysScreen
from console.tui.screens.sweeps import SweepsScreen
from console.tui.widgets.tick_box import TickBox
from tests.console.tui import fakes
from tests.console.tui.pilot import until

SIZE = (120, 40)


class SlowService(fakes.FakeService):
    """A service whose start never reaches ready, recording what the console asks."""

    def __init__(self, st=None) -> None:
        super().__init__(st)
        self.stopped = 0
        self.started = asyncio.Event()

    async def start(self, *, wait: bool = False, timeout: float | None = None):
        self.started.set()
        await asyncio.Event().wait()  # loading for ever, until cancelled

    async def stop(self, timeout: float | None = None) -> None:
        self.stopped += 1
        self._status = fakes.status("stopped")


def _app(service: fakes.FakeService | None = None, **kw) -> SpecConsoleApp:
    return SpecConsoleApp("gpu1", service=service or fakes.FakeService(), poll=False,
                          live=False, **kw)  # fmt: skip


async def _until(pilot, what: str, check: Callable[[], bool], seconds: float = 5.0) -> None:
    await until(pilot, what, check, seconds, step=0.05)


async def _on_sweeps(pilot) -> None:
    """A ready engine and the Sweeps view open."""
    pilot.app.status = fakes.status()
    await pilot.press("w")
    await _until(pilot, "sweeps", lambda: isinstance(pilot.app.screen, SweepsScreen)
                 and pilot.app.screen.is_mounted)  # fmt: skip


def _palette_names(app: SpecConsoleApp) -> list[str]:
    return [name for name, _help, _run in ConsoleCommands(app.screen)._entries()]


async def test_c_during_a_sweep_cancels_it_and_types_nothing(monkeypatch) -> None:
    began = asyncio.Event()

    async def endless_sweep(_session, *, tick, **_params):
        tick(0, 4)
        began.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(methods, "context_sweep", endless_sweep)
    app = _app()
    app.live.measure_session = lambda: None  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await _on_sweeps(pilot)
        repeat = app.screen.query_one("#sweep-repeat", Input)
        repeat.focus()
        repeat.value = ""
        await pilot.press("6", "ctrl+r")
        await _until(pilot, "the sweep", lambda: began.is_set() and app.running != "")
        assert not isinstance(app.focused, Input), "the focus stayed in the form"
        await pilot.press("C")
        await _until(pilot, "the cancel", lambda: app.running == "")
        assert repeat.value == "6"
        note = str(app.screen.query_one("#sweep-note").render())
        assert "cancelled" in note
        # The form was remembered for the next session on this host.
        assert load_form("gpu1", "sweep")["#sweep-repeat"] == "6"


async def test_escape_leaves_a_field_and_letter_keys_then_work() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await _on_sweeps(pilot)
        app.screen.query_one("#sweep-types", Input).focus()
        await pilot.press("h")  # typed: a text field is being edited
        assert isinstance(app.screen, SweepsScreen)
        assert app.screen.query_one("#sweep-types", Input).value.endswith("h")
        await pilot.press("escape")
        assert not isinstance(app.focused, Input)
        await pilot.press("s")  # a view key, now that no field is edited
        await _until(pilot, "service", lambda: type(app.screen).__name__ == "ServiceScreen")


def _burst(app: SpecConsoleApp, keys_: list[str]) -> None:
    # What a terminal delivers when an operator types fast, or tmux sends a paste: every
    # key is queued at the app before the first is handled (Pilot's press waits between
    # keys, so it cannot show this).
    for key in keys_:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


async def test_keys_typed_right_after_tab_land_in_the_field_tab_went_to() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await _on_sweeps(pilot)
        fields = [app.screen.query_one(f"#sweep-{name}", Input)
                  for name in ("contexts", "outputs", "types")]  # fmt: skip
        app.screen.query_one("#sweep-kind").focus()  # the burst starts on a select
        await pilot.pause()
        _burst(app, ["tab", "9", "tab", "tab", "c", "o", "d", "e", "shift+tab", "7"])
        await _until(pilot, "the burst", lambda: app.focused is fields[1] and fields[1].value)
        # a field entered by tab has its text selected, so typing replaces it
        assert [field.value for field in fields] == ["9", "7", "code"]


async def test_a_view_key_right_after_escape_switches_the_view() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await _on_sweeps(pilot)
        repeat = app.screen.query_one("#sweep-repeat", Input)
        repeat.focus()
        repeat.value = ""
        await pilot.pause()
        _burst(app, ["4", "escape", "s"])
        # mounted, not only current: leaving the app mid-mount fails its on_mount's queries
        await _until(pilot, "service", lambda: type(app.screen).__name__ == "ServiceScreen"
                     and app.screen.is_mounted)  # fmt: skip
        assert repeat.value == "4"


async def test_tab_and_escape_outside_a_field_keep_their_own_meaning() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await _on_sweeps(pilot)
        app.screen.leave_form()
        before = app.focused
        await pilot.press("tab")
        assert app.focused is not before  # the screen's own tab still moves the focus
        await pilot.press("ctrl+p")
        await _until(pilot, "palette", lambda: isinstance(app.screen, CommandPalette))
        await pilot.press("escape")  # the palette's field: Escape closes the palette
        await _until(pilot, "palette closed", lambda: isinstance(app.screen, SweepsScreen))


async def test_c_during_a_start_stops_the_engine_and_says_so() -> None:
    service = SlowService(fakes.status("stopped"))
    app = _app(service)
    async with app.run_test(size=SIZE) as pilot:
        app.status = await service.status()
        await pilot.press("S")
        await _until(pilot, "the start", lambda: service.started.is_set() and app.running)
        await pilot.press("C")
        await _until(pilot, "the stop", lambda: app.running == "" and service.stopped == 1)
        event = app.lifecycle
        assert isinstance(event, LifecycleEvent) and event.state == "stopped"
        assert "cancelled" in event.message and "stopped" in event.message


async def test_ctrl_p_and_colon_both_open_the_palette() -> None:
    for key in ("ctrl+p", "colon"):
        app = _app()
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(key)
            await _until(pilot, key, lambda a=app: isinstance(a.screen, CommandPalette))


async def test_the_palette_lists_a_views_actions_only_when_they_can_run() -> None:
    from console.analysis.decompose import fit

    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await _on_sweeps(pilot)
        names = _palette_names(app)
        assert "Run sweep" in names and "Verdict" not in names  # no model yet
        app.screen._set_model(fit(fakes.sweep_samples()), "fixed samples")
        assert "Verdict" in _palette_names(app)
        assert names.count("Keys") == 1
        system = [c.title for c in app.get_system_commands(app.screen)]
        assert "Keys" not in system and "Quit" not in system  # ours replace Textual's
        await pilot.press("p")
        await pilot.pause(0.1)
        assert "Run prompt" in _palette_names(app)
        await pilot.press("f")
        await pilot.pause(0.2)
        names = _palette_names(app)
        assert "All flags" in names and "Review & apply" not in names  # nothing staged
        await pilot.press("h")
        await pilot.pause(0.2)
        names = _palette_names(app)
        assert "Compare marked" not in names  # needs two marked runs


async def test_a_browser_session_binds_browser_safe_keys() -> None:
    for spec in keys.KEYS:
        clashing = {k.strip() for k in spec.keys.split(",")} & keys.BROWSER_KEYS
        assert not clashing or spec.web, f"{spec.id} has no browser-safe key"
        assert not {k.strip() for k in spec.web.split(",") if k} & keys.BROWSER_KEYS
    app = _app(web=True)
    async with app.run_test(size=SIZE) as pilot:
        await _on_sweeps(pilot)
        assert str(app.screen.query_one("#sweep-explain-button").label) == "Verdict (v)"
        await pilot.press("v")  # the verdict without a model says how to get one
        await pilot.pause(0.1)
        assert any("No model yet: run a context sweep first (r)" in n.message
                   for n in app._notifications)  # fmt: skip
        await pilot.press("question_mark")
        await _until(pilot, "keys", lambda: isinstance(app.screen, KeysScreen))
        table = app.screen.query_one("#keys-table")
        rows = [list(table.get_row_at(i)) for i in range(table.row_count)]
        assert ["sweeps", "v", "Verdict", "sweep-explain"] in rows


async def test_the_keys_screen_lists_enter_in_flags_and_history() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await _until(pilot, "keys", lambda: isinstance(app.screen, KeysScreen))
        table = app.screen.query_one("#keys-table")
        rows = [list(table.get_row_at(i)) for i in range(table.row_count)]
        assert any(r[0] == "flags" and r[1] == "Enter" for r in rows)
        assert any(r[0] == "history" and r[1] == "Enter" for r in rows)


async def test_the_host_picker_offers_no_view_keys() -> None:
    app = SpecConsoleApp(None, poll=False, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        shown = {b.id for _n, b, enabled, _t in app.screen.active_bindings.values()
                 if b.show and enabled}  # fmt: skip
        assert "dashboard" not in shown and "sweeps" not in shown
        assert {"keys", "quit"} <= shown
        await pilot.press("w")
        assert app.screen.__class__.__name__ == "ConnectScreen"


async def test_rollback_to_equal_flags_offers_no_restart() -> None:
    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        screens = len(app.screen_stack)
        app.engine._confirm_rollback(None)
        await pilot.pause(0.1)
        assert len(app.screen_stack) == screens  # no confirm modal: nothing to restart
        assert any("Nothing to roll back" in n.message for n in app._notifications)


async def test_a_ticked_box_looks_different_from_an_unticked_one() -> None:
    on, off = TickBox("x", True), TickBox("x", False)
    assert on.BUTTON_INNER != off.BUTTON_INNER and off.BUTTON_INNER.strip() == ""


async def test_a_measurement_on_a_stopped_engine_says_press_s(monkeypatch) -> None:
    app = _app(fakes.FakeService(fakes.status("stopped")))
    async with app.run_test(size=SIZE) as pilot:
        app.status = fakes.status("stopped")
        await pilot.press("p")
        await pilot.pause(0.1)
        await pilot.press("ctrl+r")
        await pilot.pause(0.1)
        assert any("press S to start it" in n.message for n in app._notifications)
        assert app.running == ""


async def test_a_crash_after_ready_is_not_titled_failed_start() -> None:
    from console.tui.screens.service import ServiceScreen

    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        app.status = fakes.status()
        app.lifecycle = LifecycleEvent("ready")
        await pilot.press("s")
        await _until(pilot, "service", lambda: isinstance(app.screen, ServiceScreen))
        app.lifecycle = LifecycleEvent("failed", message="the engine exited with code 1",
                                       exit_code=1)  # fmt: skip
        app.status = fakes.FAILED
        await pilot.pause(0.1)
        assert app.screen.query_one("#svc-failure").border_title == "engine crashed"
        app.lifecycle = LifecycleEvent("starting")
        app.lifecycle = LifecycleEvent("failed", message="exited during load", exit_code=1)
        await pilot.pause(0.1)
        assert app.screen.query_one("#svc-failure").border_title == "failed start"


async def test_while_a_field_is_edited_the_footer_says_how_to_leave_it() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _on_sweeps(pilot)
        app.screen.query_one("#sweep-repeat", Input).focus()

        def footer() -> str:
            return [s.text for s in app.screen._compositor.render_strips()][-1]

        # polled, not a fixed pause: on a loaded host the footer recomposes late
        await _until(pilot, "the leave hint", lambda: "esc Leave field" in footer())
        await pilot.press("escape")
        await _until(pilot, "help and quit", lambda: "? Keys" in footer() and "q Quit" in footer())
