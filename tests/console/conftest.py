"""Shared fixtures for console tests: isolated config dir, a real sshd, SSH options, and
one way to hold an engine service for a test."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from console.config import HostProfile, SSHProfile
from console.service import EngineService
from console.transport import SSHOptions
from tests.console.factories import builtin_profile
from tests.console.sshd import SSHD, SSHServer, run_sshd
from tests.console.sshd_restart import RestartableSSHD, run_restartable_sshd


def require_sshd() -> None:
    """Skip without an OpenSSH server on a developer's machine; fail in CI, which has one."""
    if not os.path.exists(SSHD):
        if os.environ.get("CI") == "true":
            pytest.fail(f"OpenSSH server not installed ({SSHD} missing) and CI=true")
        pytest.skip(f"OpenSSH server not installed ({SSHD} missing)")


@contextlib.asynccontextmanager
async def engine_service(
    profile: HostProfile,
    *,
    start: bool = False,
    stop: bool = True,
    timeout: float = 180.0,
    before_stop: Callable[[], object] | None = None,
) -> AsyncIterator[EngineService]:
    """The profile's service, opened the way every command opens one; started and followed
    to ready when `start`; the engine stopped afterwards when `stop` (tests leave none
    running), then the session and transport closed. `before_stop` runs first (a test
    that stopped its sshd starts it again: stopping the engine needs the link)."""
    async with EngineService.open(profile) as service:
        if start:
            event = await service.start(wait=True, timeout=timeout)
            assert event.state == "ready", event.describe()
        try:
            yield service
        finally:
            if before_stop is not None:
                before_stop()
            if stop:
                with contextlib.suppress(Exception):
                    await service.stop(timeout=10)


def ssh_profile_for(server: SSHServer, tmp_path: Path) -> SSHProfile:
    """A profile's [ssh] table for `testhost` on the test sshd; known_hosts is per test."""
    known = tmp_path / "known_hosts"
    known.write_text(server.known_hosts_line())
    return SSHProfile(
        destination="testhost", config=[str(server.ssh_config)], known_hosts=[str(known)],
        identity_file=[str(server.client_key)], use_agent=False,
    )  # fmt: skip


@pytest.fixture(autouse=True)
def _isolated_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # No test may read or write a user's real run history.
    data = tmp_path / "data"
    monkeypatch.setenv("SPECCONSOLE_DATA_DIR", str(data))
    return data


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # No test may read or write the developer's real profiles.
    cfg = tmp_path / "config"
    monkeypatch.setenv("SPECCONSOLE_CONFIG_DIR", str(cfg))
    return cfg


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    require_sshd()
    with run_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def restartable_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableSSHD]:
    """An sshd of this test's own that the test may kill and start again mid-run."""
    require_sshd()
    with run_restartable_sshd(tmp_path_factory.mktemp("sshd_restart")) as server:
        yield server


@pytest.fixture
def ssh_options(sshd_server: SSHServer, tmp_path: Path) -> SSHOptions:
    """Client options for `testhost` that never touch ~/.ssh; known_hosts is per test."""
    known = tmp_path / "known_hosts"
    known.write_text(sshd_server.known_hosts_line())
    return SSHOptions(
        destination="testhost",
        config_paths=[str(sshd_server.ssh_config)],
        known_hosts=[str(known)],
        client_keys=[str(sshd_server.client_key)],
        use_agent=False,
        connect_timeout=10,
        keepalive_interval=5,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def started_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[EngineService]:
    """The bundled engine started once for a test module (named after it, its state in a
    temp dir), stopped when the module's tests are done. Its tests share one event loop
    with it: `pytest.mark.asyncio(loop_scope="module")`."""
    name = request.module.__name__.rpartition(".")[2].removeprefix("test_").replace("_", "-")
    profile = builtin_profile(name, tmp_path_factory.mktemp(name) / "state")
    async with engine_service(profile, start=True) as svc:
        yield svc
