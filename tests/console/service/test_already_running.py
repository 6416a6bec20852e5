"""A start on a running service, by the status rules: ready is nothing to start (a
success, saying a pending restart), starting / loading / not ours / no launch config
refuse with one sentence. On fakes of the supervisor, /health and the host's checks; the
real engine's path is `tests/console/commands/test_start_wait.py`."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from console.backends import get_backend
from console.errors import ServiceError
from console.service.already_running import AlreadyRunning, already_running, start_outcome
from console.service.launch import LaunchConfig
from console.service.lifecycle import LifecycleEvent
from console.service.service_status import ServiceStatus
from console.service.supervisor import SupervisorState
from tests.console.factories import builtin_profile

CONFIG = LaunchConfig(engine="builtin", flags={}, argv=["python", "-m", "engine.serve"])


class Supervisor:
    async def state(self) -> SupervisorState:
        return SupervisorState("running", pid=4242)

    async def log_tail(self, n: int) -> list[str]:
        return ["Loading weights: 40% Completed | 2/5"]


class Client:
    def __init__(self, healthy: bool) -> None:
        self._healthy = healthy

    async def healthy(self) -> bool:
        return self._healthy


class Checks:
    def __init__(self, **changes: object) -> None:
        self.changes = changes

    async def annotate(self, st: ServiceStatus, holder: object) -> ServiceStatus:
        return replace(st, **self.changes)  # type: ignore[arg-type]


def _answer(
    tmp_path: Path, *, healthy: bool = True, config: LaunchConfig | None = CONFIG, **checks: object
) -> AlreadyRunning:
    profile = builtin_profile("h", tmp_path)
    return asyncio.run(
        already_running(
            profile, get_backend("builtin"), Supervisor(), config, Client(healthy),  # type: ignore[arg-type]
            Checks(**checks),  # type: ignore[arg-type]
        )
    )  # fmt: skip


def test_ready_is_nothing_to_start(tmp_path: Path) -> None:
    event = _answer(tmp_path)
    assert event.state == "ready" and not event.restart_pending
    assert event.message == "already running (pid 4242), ready: nothing to start"
    outcome = start_outcome(event, "h", True)
    assert (outcome["already_running"], outcome["pid"]) == (True, 4242)


def test_a_pending_restart_still_succeeds_and_names_restart(tmp_path: Path) -> None:
    drift = "the running engine differs from its config: --k 4 (config 8)"
    event = _answer(tmp_path, drift=drift)
    assert event.state == "ready" and event.restart_pending
    assert "restart pending" in event.message and "`specconsole restart h`" in event.message
    assert start_outcome(event, "h", True)["restart_pending"] is True


def test_still_loading_is_refused_with_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match=r"already loading 40%.*specconsole status h"):
        _answer(tmp_path, healthy=False)


def test_health_answered_by_another_process_is_refused(tmp_path: Path) -> None:
    not_ours = "/health is answered by that process, not ours"
    with pytest.raises(ServiceError, match="not ours"):
        _answer(tmp_path, state="starting", message=not_ours)


def test_no_launch_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match=r"without a launch config.*specconsole restart h"):
        _answer(tmp_path, config=None)


def test_a_fresh_start_outcome_says_not_already_running() -> None:
    outcome = start_outcome(LifecycleEvent("ready"), "h", True, pid=7)
    assert (outcome["already_running"], outcome["pid"], outcome["restart_pending"]) == (
        False, 7, False,
    )  # fmt: skip
