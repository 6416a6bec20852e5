"""State that tells the truth: a refused action ends its progress and says so, the
Service log lists restarts started from any view (also before it was opened), and the
status bar does not show the old pid while a restart is under way."""

from __future__ import annotations

from console.service import LifecycleEvent
from console.tui.widgets.status_bar import StatusBar
from tests.console.tui import fakes, views


async def test_a_refused_sweep_ends_its_progress_and_says_why() -> None:
    service = fakes.FakeService(fakes.status("stopped"))
    app = views.app_for(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("w")
        await views.settle(pilot)
        await pilot.click("#sweep-run-button")
        await views.settle(pilot)
        note = str(app.screen.query_one("#sweep-note").render())
        assert "warming up" not in note and "not run" in note, note
        assert not app.screen.query_one("#sweep-progress").display


async def test_service_log_lists_what_happened_before_it_opened() -> None:
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("f")
        await views.settle(pilot)
        app.events.add("apply started", at=fakes.T0)
        app.lifecycle = LifecycleEvent("ready", message="ready on port 30000", at=fakes.T0 + 5)
        await pilot.press("s")
        await views.settle(pilot)
        log = "\n".join(str(line.text) for line in app.screen.query_one("#svc-events").lines)
        assert "apply started" in log and "ready: ready on port 30000" in log, log
        app.events.add("rollback started")
        await views.settle(pilot)
        log = "\n".join(str(line.text) for line in app.screen.query_one("#svc-events").lines)
        assert log.count("started") == 2, log


async def test_no_old_pid_while_restarting() -> None:
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await views.ready(pilot, service)
        bar = app.screen.query_one(StatusBar)
        assert "pid 4242" in str(bar.query_one("#status-text").render())
        app.lifecycle = LifecycleEvent("starting", message="launching")
        app.running = "restart"
        await pilot.pause()
        text = str(bar.query_one("#status-text").render())
        assert "pid 4242" not in text and "pid …" in text, text
        app.running = ""


async def test_the_prompt_lab_form_is_remembered_across_sessions() -> None:
    service = fakes.FakeService(fakes.status("stopped"))
    app = views.app_for(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("p")
        await views.settle(pilot)
        app.screen.query_one("#lab-context").value = "1900"
        app.screen.query_one("#lab-repeat").value = "4"
        app.screen.query_one("#lab-stream").value = True
        await pilot.click("#lab-run")
        await views.settle(pilot)
    app = views.app_for(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("p")
        await views.settle(pilot)
        screen = app.screen
        assert screen.query_one("#lab-context").value == "1900"
        assert screen.query_one("#lab-repeat").value == "4"
        assert screen.query_one("#lab-stream").value is True


async def test_service_log_says_what_the_engine_was_doing_when_the_console_opened() -> None:
    # An engine started by the CLI before the console opened left the lifecycle log
    # empty, which read as no engine at all.
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(100, 30)) as pilot:
        app.monitor.on_status(await service.status())
        await pilot.press("s")
        await views.settle(pilot)
        log = "\n".join(str(line.text) for line in app.screen.query_one("#svc-events").lines)
        assert "ready when the console opened, pid 4242" in log, log
        app.monitor.on_status(await service.status())  # a later poll adds nothing
        await views.settle(pilot)
        assert len(app.screen.query_one("#svc-events").lines) == 1
