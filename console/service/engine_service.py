"""One engine service on one host: status, start/stop/restart, flag apply and rollback.

This is the API the CLI and the TUI share. It composes a transport (how to reach the
host), a backend (what engine it is), a supervisor (what keeps it running) and the
launch store (what it runs with), and reports progress through a `Lifecycle`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from console.backends import Backend, DiscoveredSchema, get_backend
from console.backends.logparse import LoadingProgress
from console.config import FlagValue, HostProfile
from console.errors import ConsoleError, FlagError, ServiceError
from console.service.engine_client import EngineClient
from console.service.flags import (
    FlagValueError,
    ModelLimits,
    apply_changes,
    canonical_flags,
    engine_parsed_ints,
    unified_diff,
)
from console.service.follow import follow_until_settled
from console.service.launch import LaunchConfig, LaunchStore, ServiceFiles
from console.service.lifecycle import Lifecycle, LifecycleEvent, Listener, State
from console.service.process_supervisor import ProcessSupervisor
from console.service.supervisor import Supervisor
from console.service.systemd import SystemdSupervisor
from console.transport.base import Transport

DEFAULT_READY_TIMEOUT = 600.0


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


@dataclass(frozen=True)
class FlagPlan:
    """A validated change, ready to apply: the diff is what the user confirms."""

    old: LaunchConfig | None
    new: LaunchConfig
    diff: str
    notices: tuple[str, ...] = ()  # renamed spellings, one line each
    checked_by: str = ""  # the engine parser that accepted the new command line, if any

    @property
    def changed(self) -> bool:
        return bool(self.diff)


@dataclass
class ApplyResult:
    event: LifecycleEvent
    config: LaunchConfig
    events: list[LifecycleEvent] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.event.state == "ready"


class ServiceBusy(ServiceError):
    """A second action that would restart or measure while another one runs."""


class EngineService:
    """One engine service for the length of a session (a CLI command, a TUI connection).

    It holds one `EngineClient` (one port forward, one HTTP client) for every request,
    publishes lifecycle events to subscribers, and lets one action run at a time: a
    restart, an apply or a sweep holds the action slot, and a second one is refused with
    "busy: <what is running>" instead of interleaving restarts.
    """

    def __init__(self, profile: HostProfile, transport: Transport) -> None:
        self.profile = profile
        self.transport = transport
        self.backend: Backend = get_backend(profile.engine)
        self._files: ServiceFiles | None = None
        self._schema: DiscoveredSchema | None = None
        self._listeners: list[Listener] = []
        self._queues: set[asyncio.Queue[LifecycleEvent]] = set()
        self._client: EngineClient | None = None
        self._action: str | None = None

    # -- session --------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` with every lifecycle event (synchronously, in order)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def clear_listeners(self) -> None:
        self._listeners.clear()

    def _publish(self, event: LifecycleEvent) -> None:
        for listener in list(self._listeners):
            listener(event)
        for queue in self._queues:
            queue.put_nowait(event)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[AsyncIterator[LifecycleEvent]]:
        """`async with service.subscribe() as events: async for event in events: ...`

        Every lifecycle event published while the block is open, in order; leaving the
        block unsubscribes."""
        queue: asyncio.Queue[LifecycleEvent] = asyncio.Queue()
        self._queues.add(queue)

        async def events() -> AsyncIterator[LifecycleEvent]:
            while True:
                yield await queue.get()

        try:
            yield events()
        finally:
            self._queues.discard(queue)

    @property
    def busy(self) -> str | None:
        """What action is running now, or None."""
        return self._action

    @contextlib.asynccontextmanager
    async def action(self, what: str) -> AsyncIterator[None]:
        """Hold the one action slot for `what`; raises `ServiceBusy` if it is taken."""
        if self._action is not None:
            raise ServiceBusy(
                f"busy: {self._action} is running on {self.profile.name}; wait for it or "
                "cancel it first."
            )
        self._action = what
        try:
            yield
        finally:
            self._action = None

    async def client(self) -> EngineClient:
        """The session's engine client, on the port the current launch config uses."""
        if self._client is None:
            # The port is read once per engine process: `_stop` drops the client, so a
            # restart with another port gets a new one.
            config = await (await self.store()).current()
            port = (config.port if config else None) or self.profile.port
            self._client = EngineClient(self.transport, port)
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
        files = await self.files()
        if self.profile.supervisor.kind == "systemd":
            return SystemdSupervisor(
                self.transport,
                files,
                self.profile.supervisor,
                self.profile.unit_name,
                self.profile.service_name,
            )
        return ProcessSupervisor(self.transport, files)

    async def schema(self) -> DiscoveredSchema:
        """The engine's flags from its own parser on the host (cached on this machine per
        host, engine, interpreter and engine version), else from its help text."""
        if self._schema is None:
            self._schema = await self.backend.discover_schema(self.transport, self.profile)
        return self._schema

    def _where(self) -> str:
        return f"{self.profile.engine} on {self.profile.name}"

    def _new_lifecycle(self, initial: State = "stopped") -> Lifecycle:
        lifecycle = Lifecycle(self.backend.parse_log, initial)
        lifecycle.add_listener(self._publish)
        return lifecycle

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
            self._publish(LifecycleEvent("starting", message=notice))
        return config

    async def current_config(self) -> LaunchConfig:
        """launch.json on the host, or (before the first start) the profile's flags."""
        existing = await (await self.store()).current()
        return existing or self.config_for(self.backend.initial_flags(self.profile))

    # -- status ---------------------------------------------------------------------

    async def status(self) -> ServiceStatus:
        supervisor = await self.supervisor()
        sup = await supervisor.state()
        config = await (await self.store()).current()
        port = (config.port if config else None) or self.profile.port
        base = {
            "host": self.profile.name,
            "engine": self.profile.engine,
            "supervisor": self.profile.supervisor.kind,
            "pid": sup.pid,
            "port": port,
            "config": config,
        }
        if sup.state == "stopped":
            return ServiceStatus(state="stopped", **base)
        if sup.state == "exited":
            code = "an unknown code" if sup.exit_code is None else f"code {sup.exit_code}"
            return ServiceStatus(
                state="failed",
                exit_code=sup.exit_code,
                message=f"the engine exited with {code}",
                log_tail=tuple(await supervisor.log_tail(50)),
                **base,
            )
        if await (await self.client()).healthy():
            return ServiceStatus(state="ready", message="/health answers 200", **base)
        # Running but not healthy yet: the log says how far loading got.
        percent = None
        for line in await supervisor.log_tail(200):
            for segment in line.split("\r"):
                event = self.backend.parse_log(segment)
                if isinstance(event, LoadingProgress):
                    percent = event.percent
        state: State = "loading" if percent is not None else "starting"
        return ServiceStatus(state=state, percent=percent, **base)

    # -- lifecycle ------------------------------------------------------------------

    async def _start_and_follow(
        self, config: LaunchConfig, *, wait: bool, timeout: float
    ) -> LifecycleEvent:
        supervisor = await self.supervisor()
        lifecycle = self._new_lifecycle()
        lifecycle.starting(f"starting {self.profile.engine} on {self.profile.name}")
        await supervisor.start(config)
        if not wait:
            return lifecycle.current
        http = await self.client()
        return await follow_until_settled(lifecycle, supervisor, http, timeout=timeout)

    async def start(
        self, *, wait: bool = False, timeout: float = DEFAULT_READY_TIMEOUT
    ) -> LifecycleEvent:
        async with self.action("start"):
            return await self._start(wait=wait, timeout=timeout)

    async def _start(self, *, wait: bool, timeout: float) -> LifecycleEvent:
        supervisor = await self.supervisor()
        if (await supervisor.state()).state == "running":
            raise ServiceError(
                f"The service on {self.profile.name} is already running; use restart to restart it."
            )
        store = await self.store()
        config = await store.current()
        if config is None:
            # First start: the profile's flags become the host's launch config.
            config = await self._first_config()
            await store.write_current(config)
        event = await self._start_and_follow(config, wait=wait, timeout=timeout)
        await self._record_outcome(store, config, event)
        return event

    async def stop(self, timeout: float = 20.0) -> None:
        async with self.action("stop"):
            await self._stop(timeout)

    async def _stop(self, timeout: float = 20.0) -> None:
        supervisor = await self.supervisor()
        was = (await supervisor.state()).state
        if was == "running":
            self._publish(LifecycleEvent("stopping", message=f"stopping {self._where()}"))
        await supervisor.stop(timeout)
        if self._client is not None:
            await self._client.close()  # the old process's port is gone
            self._client = None
        self._publish(LifecycleEvent("stopped", message=f"{self._where()} is stopped"))

    async def restart(
        self, *, wait: bool = False, timeout: float = DEFAULT_READY_TIMEOUT
    ) -> LifecycleEvent:
        async with self.action("restart"):
            await self._stop()
            return await self._start(wait=wait, timeout=timeout)

    async def _record_outcome(
        self, store: LaunchStore, config: LaunchConfig, event: LifecycleEvent
    ) -> None:
        if event.state == "ready":
            await store.clear_failed()
        elif event.state == "failed":
            await store.mark_failed(config)

    # -- flags ----------------------------------------------------------------------

    async def plan(self, changes: dict[str, str | None]) -> FlagPlan:
        """Validate a change and diff it; writes nothing. Raises `FlagError`."""
        discovered = await self.schema()
        store = await self.store()
        old = await store.current()
        base = old or self.config_for(self.backend.initial_flags(self.profile))
        roles = discovered.roles
        merged = {**base.flags, **{k: v for k, v in changes.items() if v is not None}}

        def effective(role: str, fallback: str) -> str | None:
            name = roles.get(role, fallback)
            if merged.get(name) is not None:
                return str(merged[name])
            # Unset: the engine uses its own default, which its --help prints (our engine's
            # bundled weights, say); the limits must come from those files too.
            spec = discovered.schema.resolve(name)
            default = spec.default if spec is not None else None
            return default if default not in (None, "", "None") else None

        limits = await ModelLimits.read(
            self.transport,
            effective("model_path", "model-path"),
            effective("draft_model_path", "speculative-draft-model-path"),
        )
        engine = discovered.schema.engine_version or self.profile.engine
        try:
            flags = apply_changes(
                discovered.schema, roles, base.flags, changes, limits, self._where()
            )
        except FlagValueError as exc:
            # The engine's own word on the value, when its parser can be asked.
            spec, raw = exc.spec, exc.raw
            check = await self.backend.check_flags(
                self.transport, self.profile, discovered, {spec.name: raw}
            )
            if check is None or check.ok:
                raise
            raise FlagError(f"{str(exc).rstrip('.')} ({engine}: {check.error}).") from None
        # Then the whole new command line through the engine's real parse_args, a dry run
        # on the host: nothing restarts unless the engine itself accepts it.
        notices = discovered.schema.canonical(
            {**base.flags, **{k: v for k, v in changes.items() if v is not None}}
        )[1]
        check = await self.backend.check_flags(self.transport, self.profile, discovered, flags)
        if check is not None and not check.ok:
            raise FlagError(
                f"{engine} refuses this command line: {check.error}; nothing was changed."
            )
        if check is not None and check.values:
            flags = engine_parsed_ints(discovered.schema, flags, check.values)
        new = self.config_for(flags)
        label = f"{self.profile.name}:{(await self.files()).launch}"
        old_flags = canonical_flags(discovered.schema, base.flags) if old else {}
        return FlagPlan(
            old=old,
            new=new,
            diff=unified_diff(old_flags, flags, label),
            notices=tuple(notices),
            checked_by=discovered.schema.source if check is not None else "",
        )

    async def apply(self, plan: FlagPlan, *, timeout: float = DEFAULT_READY_TIMEOUT) -> ApplyResult:
        """Write the new config (previous one kept as last-good), restart, wait for ready."""
        async with self.action("apply"):
            return await self._apply(plan, timeout)

    async def _apply(self, plan: FlagPlan, timeout: float) -> ApplyResult:
        store = await self.store()
        current = await store.current()
        if (current.id if current else None) != (plan.old.id if plan.old else None):
            raise FlagError(
                f"The launch config on {self.profile.name} changed since this diff was made; "
                "run the command again."
            )
        if current is not None and not await store.known_bad(current):
            await store.write_last_good(current)
        await store.write_current(plan.new)
        return await self._restart_with(store, plan.new, timeout)

    async def _restart_with(
        self, store: LaunchStore, config: LaunchConfig, timeout: float
    ) -> ApplyResult:
        events: list[LifecycleEvent] = []
        self.add_listener(events.append)
        try:
            await self._stop()
            event = await self._start_and_follow(config, wait=True, timeout=timeout)
        finally:
            self.remove_listener(events.append)
        await self._record_outcome(store, config, event)
        return ApplyResult(event=event, config=config, events=events)

    async def rollback(self, *, timeout: float = DEFAULT_READY_TIMEOUT) -> ApplyResult:
        """Restore last-good.json as the launch config, restart and wait for ready."""
        async with self.action("rollback"):
            return await self._rollback(timeout)

    async def _rollback(self, timeout: float) -> ApplyResult:
        store = await self.store()
        last_good = await store.last_good()
        if last_good is None:
            raise ServiceError(
                f"There is no last-good config for {self.profile.name} yet (it is kept when "
                "`set` changes flags), so there is nothing to roll back to."
            )
        await store.write_current(last_good)
        return await self._restart_with(store, last_good, timeout)

    # -- logs -----------------------------------------------------------------------

    async def logs(
        self,
        *,
        follow: bool = False,
        lines: int = 200,
        grep: str | None = None,
        on_link: Callable[[bool, str], None] | None = None,
    ) -> AsyncIterator[str]:
        """The last `lines` log lines; with `follow`, then every new line until cancelled.

        A followed log outlives the link. When the stream drops (any `TransportError`:
        sshd restarted, the network gone) it probes the host with backoff (0.5 s, doubling
        to 10 s) and resumes from a backlog of the log's last lines, skipping everything up
        to the last line it had already seen, so no line comes twice. If that line is no
        longer in the backlog (a long outage, or the engine restarted and rotated its log)
        the backlog is all new, and if it was full a marker says lines may be missing.

        Link changes go to `on_link(up, text)` when given; otherwise they are yielded as
        marker lines, whatever `grep` says: `-- link to gpu1 lost; reconnecting (attempt 2,
        next in 1 s) --` before each attempt, `-- reconnected after 4.2 s --` once back.
        A host that cannot be reached when following starts raises, as without `follow`.
        """
        # Local imports keep this change inside this method (the module is shared).
        import time
        from collections import deque

        from console.errors import TransportError

        try:
            pattern = re.compile(grep) if grep else None
        except re.error as exc:
            raise ServiceError(
                f"--grep {grep!r} is not a valid regular expression: {exc}."
            ) from None
        supervisor = await self.supervisor()
        if not follow:
            for line in await supervisor.log_tail(lines):
                if pattern is None or pattern.search(line):
                    yield line
            return

        resume_backlog = max(lines, 1000)
        quiet_s = 1.0  # a backlog arrives at once; this long without a line means it is done
        resync_max_s = 5.0
        host = self.profile.name
        seen: deque[str] = deque(maxlen=8)  # last raw lines (before grep): where to resume
        markers: list[str] = []

        def report(up: bool, text: str) -> None:
            if on_link is not None:
                on_link(up, text)
            else:
                markers.append(f"-- {text} --")

        async def pump(backlog: int, queue: asyncio.Queue) -> None:
            # One follow attempt, fed into a queue so the reader can wait with a timeout
            # without cancelling (and so breaking) the stream itself.
            source = supervisor.follow_logs(backlog=backlog)
            try:
                async for line in source:
                    queue.put_nowait(("line", line))
                queue.put_nowait(("end", None))
            except Exception as exc:
                queue.put_nowait(("error", exc))
            finally:
                with contextlib.suppress(Exception):
                    await source.aclose()  # type: ignore[attr-defined]

        if lines <= 0:
            # No backlog, so nothing may be seen before the link drops; the log's current
            # last lines are where a resume must start (and reaching the host now raises
            # here, as without follow).
            seen.extend(await supervisor.log_tail(seen.maxlen or 8))
        else:
            await self.transport.run(["true"], timeout=30)  # unreachable now: say so
        delay = 0.5
        resuming = False
        while True:
            queue: asyncio.Queue = asyncio.Queue()
            task = asyncio.create_task(pump(resume_backlog if resuming else lines, queue))
            try:
                carry = None
                if resuming:
                    # Skip the backlog up to the lines seen last. A busy log never goes
                    # quiet (every /metrics scrape is an access-log line), so the backlog's
                    # end is where those lines are; without them (a rotated log) it is a
                    # pause, a full backlog or a few seconds, whichever comes first.
                    backlog: list[str] = []
                    anchor = list(seen)
                    synced = not anchor
                    deadline = time.monotonic() + resync_max_s
                    while not synced and len(backlog) < resume_backlog:
                        wait = min(quiet_s, deadline - time.monotonic())
                        try:
                            if wait <= 0:
                                break
                            item = await asyncio.wait_for(queue.get(), wait)
                        except TimeoutError:
                            break
                        if item[0] != "line":
                            carry = item
                            break
                        backlog.append(item[1])
                        if backlog[-len(anchor) :] == anchor:
                            backlog.clear()  # all printed already
                            synced = True
                    if not synced and len(backlog) >= resume_backlog:
                        report(
                            True,
                            f"the last line printed is not in the log's last "
                            f"{resume_backlog} lines; some lines may be missing",
                        )
                    while markers:
                        yield markers.pop(0)
                    for line in backlog:
                        seen.append(line)
                        if pattern is None or pattern.search(line):
                            yield line
                while True:
                    kind, value = carry if carry is not None else await queue.get()
                    carry = None
                    if kind == "end":
                        return
                    if kind == "error":
                        if not isinstance(value, TransportError):
                            raise value
                        break
                    seen.append(value)
                    if pattern is None or pattern.search(value):
                        yield value
            finally:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            # The link dropped: probe until the host answers, then resume.
            down_since = time.monotonic()
            attempt = 0
            while True:
                attempt += 1
                report(
                    False,
                    f"link to {host} lost; reconnecting (attempt {attempt}, next in {delay:g} s)",
                )
                while markers:
                    yield markers.pop(0)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                try:
                    await self.transport.run(["true"], timeout=30)
                except TransportError:
                    continue
                break
            delay = 0.5
            report(True, f"reconnected after {time.monotonic() - down_since:.1f} s")
            while markers:
                yield markers.pop(0)
            resuming = True

    async def server_info(self) -> dict | None:
        return await (await self.client()).server_info()
