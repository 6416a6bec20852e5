"""Workers and resilience: errors become one-sentence notifications (never a traceback),
a running action shows progress and can be cancelled, a second one is refused, and a
dead link shows a banner while keys keep working."""

from __future__ import annotations

import asyncio

from console.errors import TransportError
from console.service.engine_service import ServiceBusy
from console.tui.app import SpecConsoleApp
from console.tui.screens.logs import LogsScreen
from console.tui.settings import TuiSettings
from tests.console.tui import fakes


def _app(service, **kw) -> SpecConsoleApp:
    settings = TuiSettings(status_poll_s=0.05, link_timeout_s=0.2)
    return SpecConsoleApp("gpu1", settings=settings, service=service, live=False, **kw)


def _notes(app: SpecConsoleApp) -> list[str]:
    return [n.message for n in app._notifications]


async def _until(pilot, check, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, _notes(pilot.app)
        await pilot.pause(0.05)


class SlowStart(fakes.FakeService):
    def __init__(self) -> None:
        super().__init__(fakes.status("stopped"))
        self.cancelled = False
        self.stopped = False

    async def start(self, **_: object):
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    async def stop(self, **_: object) -> None:
        self.stopped = True


async def test_a_running_action_shows_progress_refuses_a_second_and_cancels() -> None:
    service = SlowStart()
    app = _app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("S")
        await _until(pilot, lambda: app.running == "start")
        bar = app.screen.query_one("StatusBar")
        assert bar.has_class("busy") and "C cancels" in str(bar.query_one("#action").render())
        await pilot.press("S")
        assert any("busy: start is running" in n for n in _notes(app))
        await pilot.press("C")
        await _until(pilot, lambda: app.running == "")
        assert service.cancelled and service.stopped  # the launched engine is stopped too
        assert any("start cancelled: the engine was stopped" in n for n in _notes(app))


class Failing(fakes.FakeService):
    def __init__(self, exc: Exception) -> None:
        super().__init__(fakes.status("stopped"))
        self.exc = exc

    async def start(self, **_: object):
        raise self.exc


async def test_errors_are_one_sentence_notifications() -> None:
    for exc, expected in (
        (ServiceBusy("busy: apply is running on gpu1; wait for it or cancel it first."),
         "busy: apply is running on gpu1; wait for it or cancel it first."),
        (KeyError("pid"), "internal error (KeyError: 'pid')."),
    ):  # fmt: skip
        app = _app(Failing(exc))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("S")
            await _until(pilot, lambda: expected in _notes(app))  # noqa: B023
            assert all("Traceback" not in n and "\n" not in n for n in _notes(app))


class FlakyLink(fakes.FakeService):
    def __init__(self) -> None:
        super().__init__()
        self.down = False

    async def status(self):
        if self.down:
            raise TransportError("Connecting to gpu1 timed out or was cut (reset).")
        return await super().status()


class HangingLink(fakes.FakeService):
    async def status(self):
        await asyncio.sleep(3600)


async def test_a_dead_link_shows_a_banner_and_the_ui_keeps_working() -> None:
    service = FlakyLink()
    app = _app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.status is not None)
        service.down = True
        await _until(pilot, lambda: app.link_down != "")
        assert "down" in app.link_down and "reconnecting" in app.link_down
        assert "reconnecting" in str(app.screen.query_one("#status-text").render())
        await pilot.press("l")  # keys still work while the link is down
        await _until(pilot, lambda: isinstance(app.screen, LogsScreen))
        service.down = False
        await _until(pilot, lambda: app.link_down == "")
        assert any("is back" in n for n in _notes(app))


async def test_a_hanging_link_times_out_into_the_banner() -> None:
    app = _app(HangingLink())
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: "no answer in time" in app.link_down)
        await pilot.press("f")
        await _until(pilot, lambda: type(app.screen).__name__ == "FlagsScreen")
