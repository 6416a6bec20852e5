"""One engine service on one host: status, start/stop/restart, flag apply and rollback.

This is the facade the CLI and the TUI share. It composes a transport (how to reach the
host), a backend (what engine it is), a supervisor (what keeps it running) and the
launch store (what it runs with); the pieces with a concept of their own live beside it:
`service_status` (one reading of the state, by the lifecycle's rules), `flag_change`
(what a change means), `log_follower` (the resumable log). Progress goes out on one
`Broadcast` of `LifecycleEvent`s (`subscribe()`), and every timing comes from a
`ConsoleSettings`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from console.backends import Backend, DiscoveredSchema, get_backend
from console.config import FlagValue, HostProfile
from console.errors import ConsoleError, FlagError, ServiceError
from console.events import Broadcast, Subscription
from console.service.already_running import already_running
from console.service.engine_checks import EngineChecks
from console.service.engine_client import EngineClient
from console.service.flag_change import ApplyResult, FlagPlan, plan_change
from console.service.follow import follow_until_settled
from console.service.launch import LaunchConfig, LaunchStore, ServiceFiles
from console.service.lifecycle import Lifecycle, LifecycleEvent, State
from console.service.log_follower import LogFollower
from console.service.process_supervisor import ProcessSupervisor
from console.service.rollback import no_last_good
from console.service.service_status import ServiceStatus, read_status
from console.service.supervisor import Supervisor
from console.service.systemd import SystemdSupervisor
from console.service.writer_slot import ServiceBusy, WriterSlot
from console.settings import DEFAULT_SETTINGS, ConsoleSettings
from console.transport import ConfirmHostKey, Transport, open_transport

__all__ = [
    "ApplyResult",
    "EngineService",
    "FlagPlan",
    "OpenService",
    "ServiceBusy",
    "ServiceStatus",
]


class OpenService:
    """`EngineService.open(...)`: a resolved host's transport and service, closed together.

    Building it connects nothing (SSH connects on first use), so `service` and `transport`
    are usable at once by a holder that outlives one block (the TUI's session, which
    closes them itself); everyone else uses it as `async with ... as service`."""

    def __init__(self, service: EngineService) -> None:
        self.service = service
        self.transport = service.transport

    async def __aenter__(self) -> EngineService:
        return self.service

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            await self.service.close()
        finally:
            await self.transport.close()


class EngineService(WriterSlot):
    """One engine service for the length of a session (a CLI command, a TUI connection).

    It holds one `EngineClient` (one port forward, one HTTP client) for every request,
    publishes lifecycle events on `events`, and lets one action run at a time: a restart,
    an apply or a sweep holds the action slot, and a second one is refused with
    "busy: <what is running>" instead of interleaving restarts.
    """

    def __init__(
        self, profile: HostProfile, transport: Transport, settings: ConsoleSettings | None = None
    ) -> None:
        self.profile = profile
        self.transport = transport
        self.settings = settings or DEFAULT_SETTINGS
        self.backend: Backend = get_backend(profile.engine)
        self.events: Broadcast[LifecycleEvent] = Broadcast()
        self._files: ServiceFiles | None = None
        self._schema: DiscoveredSchema | None = None
        self._client: EngineClient | None = None
        self._init_slot()

    @classmethod
    def open(
        cls,
        target: str | HostProfile,
        *,
        confirm_host_key: ConfirmHostKey | None = None,
        settings: ConsoleSettings | None = None,
    ) -> OpenService:
        """`async with EngineService.open("user@gpu1", confirm_host_key=...) as service:`

        `target` is resolved by `console.hosts` (profile, ssh destination, ssh-config
        alias, `local`) unless it is a profile already; leaving the block closes the
        service's session and then the transport (the engine keeps running)."""
        from console.hosts import resolve_host

        profile = resolve_host(target) if isinstance(target, str) else target
        settings = settings or DEFAULT_SETTINGS
        transport = open_transport(profile, confirm_host_key=confirm_host_key, settings=settings)
        return OpenService(cls(profile, transport, settings))

    # -- session --------------------------------------------------------------------

    def subscribe(self) -> contextlib.AbstractAsyncContextManager[Subscription[LifecycleEvent]]:
        """`async with service.subscribe() as events: async for event in events: ...`

        Every lifecycle event published while the block is open, in order (`pending()`
        takes what arrived without waiting); leaving the block unsubscribes."""
        return self.events.subscribe()

    def _short(self) -> float:
        return self.settings.command_timeout_s

    async def checks(self) -> EngineChecks:
        return EngineChecks(self.transport, await self.files(), self.settings)

    async def _port(self) -> int:
        config = await (await self.store()).current()
        return (config.port if config else None) or self.profile.port

    async def client(self) -> EngineClient:
        """The session's engine client, on the port the current launch config uses."""
        if self._client is None:
            # The port is read once per engine process: `_stop` drops the client, so a
            # restart with another port gets a new one.
            self._client = EngineClient(self.transport, await self._port(),
                                        settings=self.settings)  # fmt: skip
        return self._client

    async def close(self) -> None:
        """End the session: close the engine client (the service itself keeps running)."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    # -- parts ----------------------------------------------------------------------

    async def files(self) -> ServiceFiles:
        if self._files is None:
            self._files = await ServiceFiles.for_profile(self.transport, self.profile)
        return self._files

    async def store(self) -> LaunchStore:
        return LaunchStore(self.transport, await self.files())

    async def supervisor(self) -> Supervisor:
        return supervisor_for(self.profile, self.transport, await self.files(), self.settings)

    async def schema(self) -> DiscoveredSchema:
        """The engine's flags from its own parser on the host (cached on this machine per
        host, engine, interpreter and engine version), else from its help text."""
        if self._schema is None:
            self._schema = await self.backend.discover_schema(self.transport, self.profile)
        return self._schema

    def _where(self) -> str:
        return f"{self.profile.engine} on {self.profile.name}"

    def _new_lifecycle(self, initial: State = "stopped") -> Lifecycle:
        return Lifecycle(
            self.backend.parse_log,
            initial,
            events=self.events,
            diagnose=self.backend.diagnose_failure,
        )

    # -- config ---------------------------------------------------------------------

    def config_for(self, flags: dict[str, FlagValue]) -> LaunchConfig:
        """The launch config for `flags`; with a known schema, in the engine's own spellings
        (renames applied, switches spelled on/off), each rename noted once in the schema."""
        schema = self._schema.schema if self._schema else None
        if schema is not None and self._schema is not None:
            flags, notices = schema.canonical(flags)
            self._schema.notices.extend(n for n in notices if n not in self._schema.notices)
        launch = self.profile.launch
        return LaunchConfig(
            engine=self.profile.engine,
            flags=flags,
            argv=self.backend.launch_argv(self.profile, flags, schema),
            env=dict(launch.env),
            workdir=launch.workdir,
        )

    async def _first_config(self) -> LaunchConfig:
        """The profile's flags as the first launch config, in the installed engine's
        spellings: a renamed flag in a profile must not start the engine with an argument
        it rejects. Without a schema (no parser, no help) the profile is used as written."""
        with contextlib.suppress(ConsoleError):
            await self.schema()
        config = self.config_for(self.backend.initial_flags(self.profile))
        for notice in self._schema.notices if self._schema else ():
            self.events.publish(LifecycleEvent("starting", message=notice))
        return config

    async def current_config(self) -> LaunchConfig:
        """launch.json on the host, or (before the first start) the profile's flags."""
        existing = await (await self.store()).current()
        return existing or self.config_for(self.backend.initial_flags(self.profile))

    async def status(self) -> ServiceStatus:
        """The state; before the first start also the config a start would launch."""
        supervisor = await self.supervisor()
        config = await (await self.store()).current()
        planned = None
        if config is None:
            with contextlib.suppress(ConsoleError):
                await self.schema()  # the installed engine's spellings, as a start uses
            planned = self.config_for(self.backend.initial_flags(self.profile))
        status = await read_status(
            self.profile, self.backend, supervisor, config, await self.client(), planned
        )
        return await (await self.checks()).annotate(status, await self.lease_holder())

    # -- lifecycle ------------------------------------------------------------------

    async def _start_and_follow(
        self, config: LaunchConfig, *, wait: bool, timeout: float
    ) -> LifecycleEvent:
        supervisor = await self.supervisor()
        lifecycle = self._new_lifecycle()
        lifecycle.starting(f"starting {self.profile.engine} on {self.profile.name}")
        checks = await self.checks()
        port = config.port or self.profile.port
        await checks.clear_port(port, self._note)
        self._still_held()
        await supervisor.start(config)
        if not wait:
            return lifecycle.current
        http = await self.client()

        async def verify() -> str | None:
            return await checks.not_ours(port, (await supervisor.state()).pid, config)

        return await follow_until_settled(
            lifecycle, supervisor, http, timeout=timeout, verify=verify
        )

    async def start(self, *, wait: bool = False, timeout: float | None = None) -> LifecycleEvent:
        """Start the engine; with `wait`, follow it until ready or failed (`timeout`
        defaults to the settings' `ready_timeout_s`)."""
        async with self.writing("start"):
            return await self._start(wait=wait, timeout=self._ready(timeout))

    def _ready(self, timeout: float | None) -> float:
        return self.settings.ready_timeout_s if timeout is None else timeout

    async def _start(self, *, wait: bool, timeout: float) -> LifecycleEvent:
        supervisor, store = await self.supervisor(), await self.store()
        config = await store.current()
        if (await supervisor.state()).state == "running":  # ready: nothing to start
            return await already_running(
                self.profile, self.backend, supervisor, config, await self.client(),
                await self.checks(),
            )  # fmt: skip
        if config is None:
            # First start: the profile's flags become the host's launch config.
            config = await self._first_config()
            self._still_held()
            await store.write_current(config)
        event = await self._start_and_follow(config, wait=wait, timeout=timeout)
        await record_outcome(store, config, event)
        return event

    async def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, then SIGKILL after `timeout` (default: the settings' `stop_timeout_s`)."""
        async with self.writing("stop"):
            await self._stop(timeout)

    async def _stop(self, timeout: float | None = None) -> None:
        supervisor = await self.supervisor()
        if (await supervisor.state()).state == "running":
            self.events.publish(LifecycleEvent("stopping", message=f"stopping {self._where()}"))
        await supervisor.stop(self.settings.stop_timeout_s if timeout is None else timeout)
        # An engine of ours that lost its pid file (an older console's race) goes too.
        checks = await self.checks()
        await checks.end_orphans(await checks.owners(await self._port(), None), self._note)
        if self._client is not None:
            await self._client.close()  # the old process's port is gone
            self._client = None
        self.events.publish(LifecycleEvent("stopped", message=f"{self._where()} is stopped"))

    async def restart(self, *, wait: bool = False, timeout: float | None = None) -> LifecycleEvent:
        async with self.writing("restart"):
            await self._stop()
            return await self._start(wait=wait, timeout=self._ready(timeout))

    # -- flags ----------------------------------------------------------------------

    async def plan(self, changes: dict[str, str | None]) -> FlagPlan:
        """Validate a change and diff it; writes nothing. Raises `FlagError`."""
        return await plan_change(self, changes)

    async def apply(self, plan: FlagPlan, *, timeout: float | None = None) -> ApplyResult:
        """Write the new config (previous one kept as last-good), restart, wait for ready."""
        async with self.writing("apply"):
            # Under the lease: a change written since this diff was made is never lost.
            store = await self.store()
            current = await store.current()
            if (current.id if current else None) != (plan.old.id if plan.old else None):
                raise FlagError(
                    f"The launch config on {self.profile.name} changed since this diff was "
                    "made; run the command again."
                )
            self._still_held()
            if current is not None and not await store.known_bad(current):
                await store.write_last_good(current)
            await store.write_current(plan.new)
            return await self._restart_with(store, plan.new, self._ready(timeout))

    async def _restart_with(
        self, store: LaunchStore, config: LaunchConfig, timeout: float
    ) -> ApplyResult:
        async with self.events.subscribe() as seen:
            await self._stop()
            event = await self._start_and_follow(config, wait=True, timeout=timeout)
            events = seen.pending()
        await record_outcome(store, config, event)
        return ApplyResult(event=event, config=config, events=events)

    async def rollback(self, *, timeout: float | None = None) -> ApplyResult:
        """Restore last-good.json as the launch config, restart and wait for ready."""
        async with self.writing("rollback"):
            store = await self.store()
            last_good = await store.last_good()
            if last_good is None:
                raise ServiceError(no_last_good(self.profile.name))
            self._still_held()
            await store.write_current(last_good)
            return await self._restart_with(store, last_good, self._ready(timeout))

    # -- logs -----------------------------------------------------------------------

    async def logs(
        self,
        *,
        follow: bool = False,
        lines: int = 200,
        grep: str | None = None,
        on_link: Callable[[bool, str], None] | None = None,
    ) -> AsyncIterator[str]:
        """The last `lines` log lines; with `follow`, then every new line until cancelled,
        across link drops without repeating a line (see `log_follower`).

        Link changes go to `on_link(up, text)` when given; otherwise they are yielded as
        marker lines, whatever `grep` says: `-- link to gpu1 lost; reconnecting (attempt 2,
        next in 1 s) --` before each attempt, `-- reconnected after 4.2 s --` once back.
        """
        follower = LogFollower(
            await self.supervisor(), self.transport, self.profile.name, self.settings,
            lines=lines, grep=grep, on_link=on_link,
        )  # fmt: skip
        async with contextlib.aclosing(follower.lines(follow=follow)) as source:
            async for line in source:
                yield line

    async def server_info(self) -> dict[str, Any] | None:
        return await (await self.client()).server_info()


def supervisor_for(
    profile: HostProfile, transport: Transport, files: ServiceFiles, settings: ConsoleSettings
) -> Supervisor:
    """What keeps the engine running on this host, as the profile says."""
    if profile.supervisor.kind == "systemd":
        return SystemdSupervisor(
            transport,
            files,
            profile.supervisor,
            profile.unit_name,
            profile.service_name,
            timings=settings,
        )
    return ProcessSupervisor(transport, files, timings=settings)


async def record_outcome(store: LaunchStore, config: LaunchConfig, event: LifecycleEvent) -> None:
    """A config that came up is no longer suspect; one that failed is marked known-bad."""
    if event.state == "ready":
        await store.clear_failed()
    elif event.state == "failed":
        await store.mark_failed(config)
