"""The checks that make "ready" mean *our* engine, running *its* config.

- before a start: the port is free, or held by an orphan of ours (ended first); a foreign
  listener refuses the start with its pid and command line;
- after a stop: no orphan of ours is left on the port;
- at the first healthy answer: the listener is under the pid we recorded, and its argv
  is the config's (else the start fails instead of reporting ready);
- in a status: who holds the port, and how the running argv differs from launch.json.
"""

from __future__ import annotations

from dataclasses import replace

from console.errors import ServiceError
from console.service.launch import LaunchConfig, ServiceFiles
from console.service.lease import Holder, Note
from console.service.port_owner import PortOwners, end_orphans, port_owners
from console.service.running_argv import argv_drift, running_argv
from console.service.service_status import ServiceStatus
from console.settings import ConsoleSettings
from console.transport.base import Transport

RUNNING = ("ready", "starting", "loading")


class EngineChecks:
    def __init__(
        self, transport: Transport, files: ServiceFiles, settings: ConsoleSettings
    ) -> None:
        self.transport = transport
        self.files = files
        self.timeout = settings.command_timeout_s
        self.stop_timeout = settings.stop_timeout_s
        self.host = transport.name

    async def owners(self, port: int, our_pid: int | None) -> PortOwners:
        return await port_owners(
            self.transport, port, self.files.dir, our_pid, timeout=self.timeout
        )

    async def clear_port(self, port: int, note: Note | None) -> None:
        """Before a start (nothing of ours runs): refuse a foreign listener, end orphans."""
        owners = await self.owners(port, None)
        if owners.foreign:
            raise ServiceError(
                f"Not starting: {owners.foreign_text(self.host)}; {foreign_fix(self.host)}, "
                "then start again."
            )
        await self.end_orphans(owners, note)

    async def end_orphans(self, owners: PortOwners, note: Note | None) -> None:
        if owners.orphans:
            if note is not None:
                note(f"ending {owners.orphan_text(self.host)}")
            await end_orphans(self.transport, owners, timeout=self.stop_timeout)

    async def not_ours(self, port: int, pid: int | None, config: LaunchConfig) -> str | None:
        """Why the engine answering /health is not the one we launched with `config`
        (None: it is). An answer from a listener nobody can see is taken as ours."""
        owners = await self.owners(port, pid)
        if not owners.ours:
            if owners.foreign:
                return f"{owners.foreign_text(self.host)} and answers /health, not our engine"
            if owners.orphans:
                return f"{owners.orphan_text(self.host)} and answers /health"
            return None
        running = await running_argv(self.transport, pid, timeout=self.timeout) if pid else None
        drift = argv_drift(running, config.argv) if running is not None else ""
        if drift:
            return f"the engine that answers runs other flags than its config: {drift}"
        return None

    async def annotate(self, st: ServiceStatus, holder: Holder | None) -> ServiceStatus:
        """`st` with who holds the port, the running argv and its drift from the config."""
        our_pid = st.pid if st.state in RUNNING else None
        owners = await self.owners(st.port, our_pid) if st.port else None
        notes: list[str] = []
        state, message = st.state, st.message
        if owners is not None and owners.foreign:
            notes.append(owners.foreign_text(self.host))
            if st.state == "ready" and not owners.ours:
                state, message = "starting", "/health is answered by that process, not ours"
        if owners is not None and owners.orphans:
            notes.append(f"{owners.orphan_text(self.host)}; `specconsole stop {self.host}` ends it")
        running = None
        if our_pid is not None:
            running = await running_argv(self.transport, our_pid, timeout=self.timeout)
        drift = ""
        if running is not None and st.config is not None:
            drift = _drift_text(argv_drift(running, st.config.argv), holder, self.host)
        return replace(
            st, state=state, message=message, port_note="; ".join(notes),
            running_argv=tuple(running) if running is not None else None, drift=drift,
            lease=holder.describe() if holder else "",
        )  # fmt: skip


def foreign_fix(host: str) -> str:
    """What to do about a foreign listener on the service's port."""
    return f"stop that process or give this profile another port (`specconsole set {host} port=N`)"


def _drift_text(drift: str, holder: Holder | None, host: str) -> str:
    if not drift:
        return ""
    if holder is not None:
        who = holder.describe()
        return f"launch config changed, restart pending ({who} holds the lease): {drift}"
    return (
        f"the running engine differs from its config: {drift}; `specconsole restart {host}` "
        "runs the config"
    )
