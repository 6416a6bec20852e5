"""Host keys in the console, against a real OpenSSH sshd on loopback: an unknown key opens
a modal with its fingerprint and is trusted only on the user's word; refusing it leaves
the reason on screen; a changed key is refused without asking, with the reason."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from console.config import HostProfile, SSHProfile, save_profile
from console.tui.app import SpecConsoleApp
from console.tui.screens.connect import ConnectScreen
from console.tui.screens.modals import HostKeyScreen
from tests.console.sshd import SSHD, SSHServer, run_sshd

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    if not os.path.exists(SSHD):
        pytest.skip(f"OpenSSH server not installed ({SSHD} missing)")
    with run_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def _profile(sshd: SSHServer, tmp_path: Path, known_hosts: str) -> Path:
    known = tmp_path / "known_hosts"
    known.write_text(known_hosts)
    save_profile(
        HostProfile(
            name="gpu-test",
            ssh=SSHProfile(destination="testhost", config=[str(sshd.ssh_config)],
                           known_hosts=[str(known)], identity_file=[str(sshd.client_key)],
                           use_agent=False),
            state_dir=str(tmp_path / "state"),
        )
    )  # fmt: skip
    return known


async def _until(pilot, check, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, [n.message for n in pilot.app._notifications]
        await pilot.pause(0.1)


def _fingerprint(sshd: SSHServer) -> str:
    return asyncssh.import_public_key(sshd.host_key_pub).get_fingerprint("sha256")


async def test_unknown_key_is_shown_and_trusted_only_when_confirmed(sshd, tmp_path) -> None:
    known = _profile(sshd, tmp_path, "")
    app = SpecConsoleApp("gpu-test", live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, HostKeyScreen))
        await _until(pilot, lambda: getattr(app.focused, "id", None) == "cancel")
        shown = str(app.screen.query_one("#hostkey").render())
        assert _fingerprint(sshd) in shown and "ssh-ed25519" in shown
        assert known.read_text() == ""  # nothing trusted before the answer
        await pilot.press("shift+tab", "enter")  # from Cancel (focused) to Trust
        await _until(pilot, lambda: app.status is not None)
        assert app.status.state == "stopped" and app.link_down == ""
    assert sshd.host_key_pub.split()[1] in known.read_text()


async def test_refusing_an_unknown_key_says_why(sshd, tmp_path) -> None:
    known = _profile(sshd, tmp_path, "")
    app = SpecConsoleApp("gpu-test", live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: getattr(app.focused, "id", None) == "cancel")
        await pilot.press("enter")  # Cancel has the focus: Enter alone refuses
        await _until(pilot, lambda: "not known" in app.connect_problem)
        assert isinstance(app.screen, ConnectScreen) and app.service is None
    assert known.read_text() == ""


async def test_changed_key_is_refused_without_asking(sshd, tmp_path) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    _profile(sshd, tmp_path, f"[127.0.0.1]:{sshd.port} {other}\n")
    app = SpecConsoleApp("gpu-test", live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: bool(app.connect_problem))
        assert app.connect_problem.startswith("Refused:")
        assert "changed" in app.connect_problem and _fingerprint(sshd) in app.connect_problem
        assert not any(isinstance(s, HostKeyScreen) for s in app.screen_stack)
        text = str(app.screen.query_one("#connect-message").render())
        assert "changed" in text
