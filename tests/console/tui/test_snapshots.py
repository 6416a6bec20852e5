"""Snapshots of the main screens at a fixed size, with fixed data (tests/console/tui/fakes.py):
no clock, pid, temp path or random value appears in any picture.

Update after an intended change with `pytest tests/console/tui/test_snapshots.py --snapshot-update`
and look at the SVGs before committing them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_textual_snapshot")

from textual.pilot import Pilot

from console.service import LifecycleEvent
from console.transport import HostKeyInfo
from console.tui.app import SpecConsoleApp
from console.tui.screens.modals import HostKeyScreen
from console.tui.settings import TuiSettings
from tests.console.tui import fakes
from tests.console.tui.views import fill_history

SIZE = (130, 42)


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # The dashboard shows the age of the last sample: a fixed "now" keeps it out of
    # the picture's differences (7 s after the last of fakes.live_samples()).
    from console.tui.screens import dashboard

    monkeypatch.setattr(dashboard, "wall_clock", lambda: fakes.T0 + 125.0)


def _app(service: fakes.FakeService, theme: str = "dark") -> SpecConsoleApp:
    return SpecConsoleApp(
        "gpu1",
        settings=TuiSettings(theme=theme),
        service=service,
        poll=False,
        live=False,  # type: ignore[arg-type]
    )


def _ready(service: fakes.FakeService, samples: bool = True):
    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        app.status = await service.status()
        app.server_info = await service.server_info()
        if samples:
            app.ingest_live(fakes.live_samples(), fakes.requests())
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause(0.6)  # one chart redraw tick

    return run_before


def test_dashboard_ready_with_live_data(snap_compare) -> None:
    service = fakes.FakeService()
    assert snap_compare(_app(service), terminal_size=SIZE, run_before=_ready(service))


def test_dashboard_light_theme(snap_compare) -> None:
    service = fakes.FakeService()
    assert snap_compare(_app(service, "light"), terminal_size=SIZE, run_before=_ready(service))


def test_dashboard_high_contrast_theme(snap_compare) -> None:
    service = fakes.FakeService()
    app = _app(service, "high-contrast")
    assert snap_compare(app, terminal_size=SIZE, run_before=_ready(service))


def test_dashboard_engine_stopped(snap_compare) -> None:
    service = fakes.FakeService(fakes.status("stopped"))
    app = _app(service)
    assert snap_compare(app, terminal_size=SIZE, run_before=_ready(service, samples=False))


def test_service_failed_start(snap_compare) -> None:
    service = fakes.FakeService(fakes.FAILED)

    async def run_before(pilot: Pilot) -> None:
        await _ready(service, samples=False)(pilot)
        pilot.app.lifecycle = LifecycleEvent(
            "failed", message="the engine exited with code 1", exit_code=1,
            log_tail=fakes.FAILED.log_tail, at=fakes.T0,
        )  # fmt: skip
        await pilot.press("s")
        await pilot.pause(0.3)

    assert snap_compare(_app(service), terminal_size=SIZE, run_before=run_before)


def test_flags_form(snap_compare) -> None:
    service = fakes.FakeService()

    async def run_before(pilot: Pilot) -> None:
        await _ready(service, samples=False)(pilot)
        await pilot.press("f")
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.3)

    assert snap_compare(_app(service), terminal_size=SIZE, run_before=run_before)


def test_logs_filtered(snap_compare) -> None:
    lines = [f"[2026-01-01 12:00:{i:02d}] Decode batch, #running-req: 1, "
             f"gen throughput (token/s): {100 + i}.0"
             if i % 3 else f"[2026-01-01 12:00:{i:02d}] INFO GET /health 200"
             for i in range(30)]  # fmt: skip
    service = fakes.FakeService(log=lines)

    async def run_before(pilot: Pilot) -> None:
        await _ready(service, samples=False)(pilot)
        await pilot.press("l")
        await pilot.pause(0.3)
        await pilot.press("slash", *"Decode", "enter")
        await pilot.press("exclamation_mark", *"10[0-4]", "enter")
        await pilot.pause(0.3)

    assert snap_compare(_app(service), terminal_size=SIZE, run_before=run_before)


def test_keys_screen(snap_compare, monkeypatch) -> None:
    from pathlib import Path

    # The Keys screen names the settings file: one fixed path, not this test's temp dir.
    monkeypatch.setattr(
        "console.tui.screens.keys.settings_path", lambda: Path("~/.config/specconsole/tui.toml")
    )
    service = fakes.FakeService()
    app = _app(service)
    assert snap_compare(app, terminal_size=SIZE, press=["question_mark"],
                        run_before=_ready(service, samples=False))  # fmt: skip


def test_host_key_modal(snap_compare) -> None:
    service = fakes.FakeService()
    info = HostKeyInfo(
        destination="ops@gpu1", known_hosts_name="gpu1", key_type="ssh-ed25519",
        fingerprint="SHA256:3q2+7wXvJm0Yx1tEo0d8Hf4qZQm2u5m5cJzXj1y8s9c", key=None,  # type: ignore[arg-type]
    )  # fmt: skip

    async def run_before(pilot: Pilot) -> None:
        await _ready(service, samples=False)(pilot)
        pilot.app.push_screen(HostKeyScreen(info))
        await pilot.pause(0.3)

    assert snap_compare(_app(service), terminal_size=SIZE, run_before=run_before)


def test_sweeps_with_model_and_verdict(snap_compare) -> None:
    from console.analysis.decompose import fit
    from console.analysis.stats import summarize

    service = fakes.FakeService()
    samples = fakes.sweep_samples()

    async def run_before(pilot: Pilot) -> None:
        await _ready(service, samples=False)(pilot)
        await pilot.press("w")
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        screen = pilot.app.screen
        screen._show_points(summarize(samples), "context")
        screen._set_model(fit(samples), "fixed samples", samples)
        for selector, value in (("#v-observed", "40"), ("#v-context", "1024"),
                                ("#v-text", "prose"), ("#v-baseline", "138"),
                                ("#v-baseline-context", "64")):  # fmt: skip
            screen.query_one(selector).value = value
        await pilot.press("ctrl+t")
        await pilot.pause(0.6)

    assert snap_compare(_app(service), terminal_size=(150, 48), run_before=run_before)


def test_history_compare(snap_compare, monkeypatch) -> None:
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()

    fill_history()
    service = fakes.FakeService()

    async def run_before(pilot: Pilot) -> None:
        await _ready(service, samples=False)(pilot)
        await pilot.press("h")
        await pilot.pause(0.3)
        await pilot.app.workers.wait_for_complete()
        await pilot.press("space", "down", "space", "c")
        await pilot.pause(0.3)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.2)

    try:
        assert snap_compare(_app(service), terminal_size=(130, 42), run_before=run_before)
    finally:
        monkeypatch.undo()
        time.tzset()
