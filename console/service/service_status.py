"""`ServiceStatus`: one reading of a service's state, by the lifecycle's own rules.

`read_status` asks the supervisor, then /health, then the log, only as far as it needs
to, and turns the answers into a state with the functions `Lifecycle` itself uses
(`exited_event`, `loading_percent`, `HEALTHY`), so a status poll and a followed start
never disagree about what the same host is doing.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.backends import Backend, Bind, Speculation
from console.config import HostProfile
from console.service.engine_client import EngineClient
from console.service.launch import LaunchConfig
from console.service.lifecycle import (
    FAILURE_LINES,
    HEALTHY,
    State,
    exited_event,
    loading_percent,
)
from console.service.supervisor import Supervisor

PROGRESS_LINES = 200  # how far back the log is searched for a loading percent


@dataclass(frozen=True)
class ServiceStatus:
    host: str
    engine: str
    state: State
    supervisor: str
    pid: int | None = None
    port: int | None = None
    percent: int | None = None
    exit_code: int | None = None
    message: str = ""
    log_tail: tuple[str, ...] = ()
    config: LaunchConfig | None = None
    planned: LaunchConfig | None = None  # stopped with no launch config: what start would run
    speculation: Speculation | None = None
    bind: Bind | None = None
    root_cause: str = ""  # a failure's first fatal/ERROR line, from the engine's log
    hint: str = ""  # one sentence for a failure the engine's adapter recognises
    # What the host says beside the supervisor (see `engine_checks`):
    port_note: str = ""  # a foreign listener or an orphan of ours on the port
    running_argv: tuple[str, ...] | None = None  # what the engine under our pid runs
    drift: str = ""  # how that differs from the launch config ("" when it does not)
    lease: str = ""  # who holds the writer's lease now (a change in progress)

    @property
    def revision(self) -> str | None:
        """The launch config's id, as read: what a reader saw, to tell a later change."""
        return self.config.id if self.config else None

    @property
    def launch(self) -> LaunchConfig | None:
        """The config the engine runs (or ran) with, else the one a start would use."""
        return self.config or self.planned

    def as_dict(self) -> dict[str, object]:
        launch = self.launch
        return {
            "host": self.host,
            "engine": self.engine,
            "state": self.state,
            "supervisor": self.supervisor,
            "pid": self.pid,
            "port": self.port,
            "percent": self.percent,
            "exit_code": self.exit_code,
            "message": self.message,
            "log_tail": list(self.log_tail),
            "flags": launch.flags if launch else None,
            "argv": launch.argv if launch else None,
            "argv_planned": self.config is None and launch is not None,
            "speculation": self.speculation.as_dict() if self.speculation else None,
            "bind": self.bind.address if self.bind else None,
            "bind_wide": self.bind.wide if self.bind else None,
            "root_cause": self.root_cause,
            "hint": self.hint,
            "revision": self.revision,
            "running_argv": list(self.running_argv) if self.running_argv is not None else None,
            "drift": self.drift,
            "port_note": self.port_note,
            "lease": self.lease,
        }


async def read_status(
    profile: HostProfile,
    backend: Backend,
    supervisor: Supervisor,
    config: LaunchConfig | None,
    client: EngineClient,
    planned: LaunchConfig | None = None,
) -> ServiceStatus:
    sup = await supervisor.state()
    port = (config.port if config else None) or profile.port
    flags = (config or planned).flags if (config or planned) else {}
    base = {
        "host": profile.name,
        "engine": profile.engine,
        "supervisor": profile.supervisor.kind,
        "pid": sup.pid,
        "port": port,
        "config": config,
        "planned": None if config else planned,
        "speculation": backend.speculation(flags),
        "bind": backend.bind(flags),
    }
    if sup.state == "stopped":
        return ServiceStatus(state="stopped", **base)
    if sup.state == "exited":
        lines = await supervisor.log_tail(FAILURE_LINES)
        failed = exited_event(sup.exit_code, lines, diagnose=backend.diagnose_failure)
        return ServiceStatus(
            state="failed",
            exit_code=failed.exit_code,
            message=failed.message,
            log_tail=failed.log_tail,
            root_cause=failed.root_cause,
            hint=failed.hint,
            **base,
        )
    if await client.healthy():
        return ServiceStatus(state="ready", message=HEALTHY, **base)
    # Running but not healthy yet: the log says how far loading got.
    percent = loading_percent(await supervisor.log_tail(PROGRESS_LINES), backend.parse_log)
    state: State = "loading" if percent is not None else "starting"
    return ServiceStatus(state=state, percent=percent, **base)
