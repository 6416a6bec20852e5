"""`start` on a service that already runs: nothing to start is a success, as with
`systemctl start`, so a script's start-then-measure runs twice.

The answer is one reading of the host by the status rules (`read_status`, then the
checks' `annotate`), so a start and a status never disagree:

- ready, our engine, with its launch config: an `AlreadyRunning` event (state "ready");
  when the running engine's argv differs from launch.json it still succeeds (the engine
  serves; changing what runs is `restart`'s job) and says the restart is pending;
- still starting or loading, /health answered by a process not ours, or no launch config
  on the host: refused, one sentence naming what to run instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.backends import Backend
from console.config import HostProfile
from console.errors import ServiceError
from console.service.engine_checks import EngineChecks
from console.service.engine_client import EngineClient
from console.service.launch import LaunchConfig
from console.service.lifecycle import LifecycleEvent
from console.service.service_status import ServiceStatus, read_status
from console.service.supervisor import Supervisor


@dataclass(frozen=True)
class AlreadyRunning(LifecycleEvent):
    """A start that found its engine ready: nothing was started."""

    pid: int | None = None
    drift: str = ""  # how the running engine differs from launch.json ("" when it does not)

    @property
    def restart_pending(self) -> bool:
        return bool(self.drift)


def already_running_text(host: str, pid: int | None, drift: str) -> str:
    where = f" (pid {pid})" if pid else ""
    text = f"already running{where}, ready: nothing to start"
    if drift:
        text += f"; restart pending, {drift}"
        if "specconsole restart" not in drift:
            text += f"; `specconsole restart {host}` runs the config"
    return text


def refused_text(st: ServiceStatus) -> str:
    host = st.host
    if st.state in ("starting", "loading"):
        progress = f" {st.percent}%" if st.percent is not None else ""
        why = f" ({st.message})" if st.message else ""
        return (
            f"Not starting {host}: it is already {st.state}{progress}{why}; "
            f"`specconsole status {host}` says when it is ready."
        )
    if st.config is None:
        return (
            f"Not starting {host}: an engine runs (pid {st.pid}) without a launch config on "
            f"the host; `specconsole restart {host}` runs it with the profile's flags."
        )
    return f"Not starting {host}: the engine is {st.state}; see `specconsole status {host}`."


async def already_running(
    profile: HostProfile,
    backend: Backend,
    supervisor: Supervisor,
    config: LaunchConfig | None,
    client: EngineClient,
    checks: EngineChecks,
) -> AlreadyRunning:
    """The supervisor says our engine runs: succeed if it is ready, else refuse
    (`ServiceError`, one sentence)."""
    st = await read_status(profile, backend, supervisor, config, client)
    # No holder passed: the caller holds the lease itself, and the drift says restart.
    st = await checks.annotate(st, None)
    if st.state != "ready" or st.config is None:
        raise ServiceError(refused_text(st))
    return AlreadyRunning(
        "ready",
        message=already_running_text(st.host, st.pid, st.drift),
        pid=st.pid,
        drift=st.drift,
    )


def start_outcome(
    event: LifecycleEvent, host: str, waited: bool, pid: int | None = None
) -> dict[str, object]:
    """A start's (or restart's) outcome as `--json` prints it; `pid` is the engine's
    after the start (an `AlreadyRunning` event carries its own)."""
    already = isinstance(event, AlreadyRunning)
    return {
        "host": host, "state": event.state, "message": event.message,
        "already_running": already, "pid": event.pid if already else pid,
        "restart_pending": already and event.restart_pending,
        "drift": event.drift if already else "", "waited": waited,
        "exit_code": event.exit_code, "root_cause": event.root_cause, "hint": event.hint,
        "log_tail": list(event.log_tail),
    }  # fmt: skip
