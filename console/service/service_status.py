"""`ServiceStatus`: one reading of a service's state, by the lifecycle's own rules.

`read_status` asks the supervisor, then /health, then the log, only as far as it needs
to, and turns the answers into a state with the functions `Lifecycle` itself uses
(`exited_event`, `loading_percent`, `HEALTHY`), so a status poll and a followed start
never disagree about what the same host is doing.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.backends import Backend
from console.config import HostProfile
from console.service.engine_client import EngineClient
from console.service.launch import LaunchConfig
from console.service.lifecycle import HEALTHY, LOG_TAIL, State, exited_event, loading_percent
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

    def as_dict(self) -> dict[str, object]:
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
            "flags": self.config.flags if self.config else None,
            "argv": self.config.argv if self.config else None,
        }


async def read_status(
    profile: HostProfile,
    backend: Backend,
    supervisor: Supervisor,
    config: LaunchConfig | None,
    client: EngineClient,
) -> ServiceStatus:
    sup = await supervisor.state()
    port = (config.port if config else None) or profile.port
    base = {
        "host": profile.name,
        "engine": profile.engine,
        "supervisor": profile.supervisor.kind,
        "pid": sup.pid,
        "port": port,
        "config": config,
    }
    if sup.state == "stopped":
        return ServiceStatus(state="stopped", **base)
    if sup.state == "exited":
        failed = exited_event(sup.exit_code, await supervisor.log_tail(LOG_TAIL))
        return ServiceStatus(
            state="failed",
            exit_code=failed.exit_code,
            message=failed.message,
            log_tail=failed.log_tail,
            **base,
        )
    if await client.healthy():
        return ServiceStatus(state="ready", message=HEALTHY, **base)
    # Running but not healthy yet: the log says how far loading got.
    percent = loading_percent(await supervisor.log_tail(PROGRESS_LINES), backend.parse_log)
    state: State = "loading" if percent is not None else "starting"
    return ServiceStatus(state=state, percent=percent, **base)
