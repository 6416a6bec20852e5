"""The console over a real SSH link that dies: a real sshd on loopback is killed while
the app watches an engine through it. A banner says the link is down and reconnecting,
keys keep working, and once sshd is back the banner goes, the live charts carry on, and
no sample taken before the drop is lost."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
import pytest

from console.config import HostProfile, LaunchProfile, save_profile
from console.service import EngineService
from console.transport import open_transport
from console.tui.app import SpecConsoleApp
from console.tui.screens.logs import LogsScreen
from console.tui.settings import TuiSettings
from tests.console.conftest import restartable_sshd, ssh_profile_for  # noqa: F401 (fixture)
from tests.console.sshd_restart import RestartableSSHD
from tests.console.tui.test_app_engine import state, wait_for
from tests.ports import free_port

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


async def _decode(port: int, n: int = 200) -> None:
    # Straight to the engine (it listens on this machine): traffic for the live series.
    body = {"text": "def main():\n", "sampling_params": {"max_new_tokens": n, "ignore_eos": True}}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
        assert (await http.post("/generate", json=body)).status_code == 200


async def test_link_down_banner_and_recovery_over_a_real_sshd(
    restartable_sshd: RestartableSSHD,  # noqa: F811
    tmp_path: Path,
) -> None:
    profile = HostProfile(
        name="gpu-link", engine="builtin", ssh=ssh_profile_for(restartable_sshd.server, tmp_path),
        launch=LaunchProfile(python=sys.executable), port=free_port(),
        flags={"skip-server-warmup": True, "decode-log-interval": 10},
        state_dir=str(tmp_path / "state"),
    )  # fmt: skip
    save_profile(profile)
    settings = TuiSettings(status_poll_s=0.5, link_timeout_s=3.0)
    app = SpecConsoleApp("gpu-link", settings=settings)
    try:
        async with app.run_test(size=(130, 42)) as pilot:
            await wait_for(pilot, "the first status", lambda: state(app) == "stopped", 60)
            await pilot.press("S")
            await wait_for(pilot, "ready", lambda: state(app) == "ready" and not app.running)
            await _decode(profile.port)
            await wait_for(pilot, "live samples", lambda: any(s.tok_s for s in app.live_samples))
            before = [s for s in app.live_samples if s.tok_s]

            restartable_sshd.stop()
            await wait_for(pilot, "the banner", lambda: app.link_down != "", 60)
            banner = str(app.screen.query_one("#status-text").render())
            assert "reconnecting" in banner, banner
            await pilot.press("l")  # the UI keeps answering keys while the link is down
            await wait_for(pilot, "the log view", lambda: isinstance(app.screen, LogsScreen))
            await asyncio.sleep(2)

            restartable_sshd.start()
            await wait_for(pilot, "the link back", lambda: app.link_down == "", 90)
            await pilot.press("d")
            count = len(app.live_samples)
            await _decode(profile.port)
            await wait_for(
                pilot,
                "new live samples",
                lambda: any(s.tok_s for s in app.live_samples[count:]),
                90,
            )
            kept = [s for s in app.live_samples if s.tok_s]
            assert kept[: len(before)] == before  # nothing taken before the drop was lost
            await pilot.press("q")
    finally:
        restartable_sshd.start()
        transport = open_transport(profile)
        try:
            await EngineService(profile, transport).stop(timeout=10)
        finally:
            await transport.close()
