"""The console app: one host's `EngineService`, shared state, and every action's worker.

The app owns the session (profile, transport, service) and the state all screens show
(service status, the latest lifecycle event, the link, the running action) as reactives;
screens watch them and never call each other. Each service call runs in a worker through
`run_service_action`, which holds the one-action rule, shows progress in the status bar, can be
cancelled, and turns every error into a one-sentence notification: a `ConsoleError` as
it is, anything else as one line naming the type. No traceback reaches the screen.

Quitting closes only the session (port forward, HTTP client, SSH link); the engine
service keeps running, as with the headless CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from textual import on, work
from textual.app import App
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from console.config import HostProfile
from console.errors import ConfigError, ConsoleError, TransportError
from console.measure.baseline import BaselineApply, apply_with_baseline, comparison_lines
from console.measure.records import LiveSample, RequestSample
from console.measure.session import MeasureSession
from console.service import EngineService, LifecycleEvent
from console.service.engine_service import ApplyResult, FlagPlan, ServiceStatus
from console.store import RunStore
from console.transport import HostKeyChanged, HostKeyInfo, Transport
from console.tui import keys
from console.tui.commands import ConsoleCommands
from console.tui.screens.connect import ConnectScreen
from console.tui.screens.dashboard import DashboardScreen
from console.tui.screens.flags import FlagsScreen
from console.tui.screens.history import HistoryScreen
from console.tui.screens.keys import KeysScreen
from console.tui.screens.logs import LogsScreen
from console.tui.screens.modals import ConfirmScreen, HostKeyScreen, InfoScreen
from console.tui.screens.prompt_lab import PromptLabScreen
from console.tui.screens.service import ServiceScreen
from console.tui.screens.sweeps import SweepsScreen
from console.tui.settings import TuiSettings, load_settings, save_theme
from console.tui.themes import load_themes

VIEWS = ("dashboard", "service", "logs", "flags", "prompt", "sweeps", "history")
LIVE_KEEP = 2000  # live samples kept for the charts
REQUESTS_KEEP = 50  # requests kept for the table

Connector = Callable[[HostProfile, Callable[[HostKeyInfo], Awaitable[bool]]], Any]


def one_line(exc: BaseException) -> str:
    """A user error as it is; a bug as one line that names it (never a traceback)."""
    if isinstance(exc, ConsoleError):
        return str(exc)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"internal error ({type(exc).__name__}{': ' + text if text else ''})."


def default_connector(
    profile: HostProfile, confirm: Callable[[HostKeyInfo], Awaitable[bool]]
) -> tuple[EngineService, Transport]:
    # The session outlives any one block (it is closed on unmount), so the opened pair
    # is taken as it is rather than entered.
    opened = EngineService.open(profile, confirm_host_key=confirm)
    return opened.service, opened.transport


class SpecConsoleApp(App[int]):
    TITLE = "specconsole"
    CSS_PATH = "app.tcss"
    BINDINGS = keys.bindings("app")
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    MODES: ClassVar[dict[str, type[Screen]]] = {  # type: ignore[assignment]
        "dashboard": DashboardScreen,
        "service": ServiceScreen,
        "logs": LogsScreen,
        "flags": FlagsScreen,
        "prompt": PromptLabScreen,
        "sweeps": SweepsScreen,
        "history": HistoryScreen,
    }

    status: reactive[ServiceStatus | None] = reactive(None, always_update=True)
    lifecycle: reactive[LifecycleEvent | None] = reactive(None)
    server_info: reactive[dict | None] = reactive(None)
    link_down: reactive[str] = reactive("")  # why the link is down, "" while it is up
    running: reactive[str] = reactive("")  # the action in progress, "" when none
    live_version: reactive[int] = reactive(0)  # bumped when live samples/requests change

    def __init__(
        self,
        host: str | None = None,
        *,
        settings: TuiSettings | None = None,
        theme: str | None = None,
        accept_new_host_key: bool = False,
        service: EngineService | None = None,
        connector: Connector = default_connector,
        poll: bool = True,
        live: bool = True,
    ) -> None:
        super().__init__()
        self.settings = settings or load_settings()
        self.host = host
        self.accept_new_host_key = accept_new_host_key
        self.service: EngineService | None = service
        self.transport: Transport | None = None
        self._connector = connector
        self._poll = poll
        self._live = live
        self.live_series: Any = None  # the LiveSeries feeding the dashboard, once running
        self._requested_theme = theme
        self._action_worker: Worker | None = None
        self.live_samples: list[LiveSample] = []
        self.requests: list[RequestSample] = []
        self.connect_problem = ""  # shown on the connect screen
        self._measure: MeasureSession | None = None
        self._store: RunStore | None = None
        keymap = keys.check_keymap(dict(self.settings.keys))
        self.set_keymap(keymap)
        self.keymap = keymap

    # -- start-up -------------------------------------------------------------------

    def on_mount(self) -> None:
        self._setup_themes()
        if self.service is not None:
            self._connected()
        else:
            self.push_screen(ConnectScreen())
            if self.host:
                self.connect(self.host)

    def _setup_themes(self) -> None:
        for theme in load_themes().values():
            self.register_theme(theme)
        wanted = self._requested_theme or self.settings.theme
        if wanted not in self.available_themes:
            names = ", ".join(sorted(self.available_themes))
            self.notify(
                f"No theme named {wanted!r}; using dark (known: {names}).", severity="error"
            )
            wanted = "dark" if "dark" in self.available_themes else "textual-dark"
        self.theme = wanted
        if self._requested_theme and wanted == self._requested_theme:
            save_theme(wanted)
        self.theme_changed_signal.subscribe(self, self._remember_theme)

    def _remember_theme(self, theme: Any) -> None:
        try:
            save_theme(theme.name)
        except OSError as exc:
            self.notify(f"Could not remember the theme: {exc}.", severity="warning")

    def connect(self, host: str) -> None:
        """Resolve `host`, open its transport and read its state (host keys asked here)."""
        from console.hosts import resolve_host

        try:
            profile = resolve_host(host)
        except ConsoleError as exc:
            self._connect_failed(str(exc))
            return
        self.host = profile.name
        self.connect_problem = ""
        self._connect_worker(profile)

    @work(group="connect", exclusive=True, exit_on_error=False, description="connecting")
    async def _connect_worker(self, profile: HostProfile) -> None:
        self._set_connect_text(f"Connecting to {profile.name}…")
        service, transport = self._connector(profile, self._confirm_host_key)
        try:
            status = await asyncio.wait_for(service.status(), self.settings.link_timeout_s + 30)
        except HostKeyChanged as exc:
            await transport.close()
            self._connect_failed(f"Refused: {exc}")
            return
        except (ConsoleError, TimeoutError) as exc:
            await transport.close()
            reason = str(exc) if isinstance(exc, ConsoleError) else "no answer in time."
            self._connect_failed(f"Could not connect to {profile.name}: {reason}")
            return
        except Exception as exc:
            await transport.close()
            self._connect_failed(one_line(exc))
            return
        self.service, self.transport = service, transport
        self.status = status
        self._connected()

    def _set_connect_text(self, text: str) -> None:
        screen = self.screen
        if isinstance(screen, ConnectScreen):
            screen.show_message(text)

    def _connect_failed(self, message: str) -> None:
        self.connect_problem = message
        self.notify(message, severity="error", timeout=10)
        self._set_connect_text(message)
        if isinstance(self.screen, ConnectScreen):
            self.screen.show_picker()

    async def _confirm_host_key(self, info: HostKeyInfo) -> bool:
        """The transport asks before trusting an unknown key: a modal with its fingerprint."""
        if self.accept_new_host_key:
            self.notify(f"Trusting new host key: {info.describe()}.", severity="warning")
            return True
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def done(result: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(result))

        self.push_screen(HostKeyScreen(info), done)
        return await answer

    def _connected(self) -> None:
        if isinstance(self.screen, ConnectScreen):
            self.pop_screen()
        self.switch_mode("dashboard")
        if self._poll:
            self._poll_status()
            self._follow_lifecycle()
        if self._live:
            self._run_live()
        self._read_server_info()

    def session_service(self) -> EngineService:
        """The connected host's service; a ConsoleError before a host is open."""
        if self.service is None:
            raise ConsoleError("Not connected to a host yet; pick one first.")
        return self.service

    # -- background reads -----------------------------------------------------------

    @work(group="poll", exclusive=True, exit_on_error=False, description="status")
    async def _poll_status(self) -> None:
        """Read the service state every few seconds; a slow or dead link shows a banner.
        Any other error is shown once, not every poll."""
        service = self.service
        if service is None:
            return
        down_since: float | None = None
        last_error = ""
        while True:
            if not service.busy:
                try:
                    status = await asyncio.wait_for(service.status(), self.settings.link_timeout_s)
                except (TransportError, TimeoutError) as exc:
                    down_since = down_since or time.monotonic()
                    reason = str(exc) if isinstance(exc, TransportError) else "no answer in time"
                    self.link_down = (
                        f"Link to {self.host} is down ({reason.rstrip('.')}); reconnecting…"
                    )
                except Exception as exc:
                    if one_line(exc) != last_error:
                        last_error = one_line(exc)
                        self.notify(last_error, severity="error")
                else:
                    last_error = ""
                    if down_since is not None:
                        self.notify(
                            f"Link to {self.host} is back after "
                            f"{time.monotonic() - down_since:.0f} s."
                        )
                        down_since = None
                    self.link_down = ""
                    self._on_status(status)
            await asyncio.sleep(self.settings.status_poll_s)

    def _on_status(self, status: ServiceStatus) -> None:
        previous = self.status
        self.status = status
        if status.state == "ready" and (
            previous is None or previous.state != "ready" or previous.pid != status.pid
        ):
            self._read_server_info()
        elif status.state != "ready":
            self.server_info = None

    @work(group="info", exclusive=True, exit_on_error=False, description="server info")
    async def _read_server_info(self) -> None:
        if self.service is None:
            return
        try:
            self.server_info = await asyncio.wait_for(
                self.service.server_info(), self.settings.link_timeout_s
            )
        except Exception:
            self.server_info = None  # not ready or unreachable: the status bar says which

    @work(group="lifecycle", exclusive=True, exit_on_error=False, description="lifecycle")
    async def _follow_lifecycle(self) -> None:
        async with self.session_service().subscribe() as events:
            async for event in events:
                self.lifecycle = event

    # -- live data ------------------------------------------------------------------

    @work(group="live", exclusive=True, exit_on_error=False, description="live series")
    async def _run_live(self) -> None:
        from console.tui.live_feed import feed_live

        service = self.session_service()
        while True:
            try:
                await feed_live(service, self.ingest_live, self._set_live_series)
            except ImportError:
                return  # no live series in this installation: the charts stay empty
            except Exception as exc:
                self.log.warning(f"live series stopped: {one_line(exc)}; restarting")
            await asyncio.sleep(5.0)

    def _set_live_series(self, series: object) -> None:
        self.live_series = series

    def ingest_live(
        self, samples: Sequence[LiveSample] = (), requests: Sequence[RequestSample] = ()
    ) -> None:
        """Add live samples and measured requests (from the live series or a test)."""
        if samples:
            self.live_samples = (self.live_samples + list(samples))[-LIVE_KEEP:]
        if requests:
            self.requests = (self.requests + list(requests))[-REQUESTS_KEEP:]
        self.live_version += 1

    # -- measurement ----------------------------------------------------------------

    def measure_session(self) -> MeasureSession:
        """The session's one measurement session: runs go to the history store, every
        measured request to the dashboard's table and the live series."""
        if self._measure is None:
            self._measure = MeasureSession(
                self.session_service(),
                store=self.run_store(),
                on_sample=self._measured,
                on_note=lambda text: self.notify(text, severity="warning"),
            )
        return self._measure

    def run_store(self) -> RunStore:
        if self._store is None:
            self._store = RunStore.default()
        return self._store

    def _measured(self, sample: RequestSample) -> None:
        if self.live_series is not None:
            self.live_series.record_request(sample)  # its sample reaches the charts itself
        self.ingest_live(requests=[sample])

    # -- actions --------------------------------------------------------------------

    def run_service_action(
        self,
        what: str,
        call: Callable[[], Awaitable[Any]],
        on_result: Callable[[Any], None] | None = None,
    ) -> Worker | None:
        """Run one service call in a worker: progress shown, cancellable, errors as one
        sentence. A second action while one runs is refused, as the service would."""
        if self.service is None:
            self.notify("Not connected to a host yet.", severity="warning")
            return None
        if self.running:
            self.notify(f"busy: {self.running} is running; wait for it or cancel it (C).",
                        severity="warning")  # fmt: skip
            return None

        async def body() -> None:
            self.running = what
            try:
                result = await call()
            except asyncio.CancelledError:
                self.notify(f"{what} cancelled.", severity="warning")
                raise
            except Exception as exc:
                self.notify(one_line(exc), severity="error", timeout=10)
            else:
                if on_result is not None:
                    on_result(result)
            finally:
                self.running = ""
                self._refresh_status_soon()

        self._action_worker = self.run_worker(
            body(), group="action", exit_on_error=False, description=what
        )
        return self._action_worker

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        # Workers catch their own errors; this is the net under them.
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(one_line(event.worker.error), severity="error")

    def _refresh_status_soon(self) -> None:
        if self.service is None:
            return

        async def read() -> None:
            with contextlib.suppress(Exception):  # the poll loop reports the link
                self._on_status(
                    await asyncio.wait_for(self.service.status(), self.settings.link_timeout_s)
                )

        self.run_worker(read(), group="status-once", exclusive=True, exit_on_error=False)

    def _settled(self, event: LifecycleEvent) -> None:
        self.lifecycle = event
        self.server_info = None  # it described the process before this action
        if event.state == "ready":
            self._read_server_info()
            self.notify(f"{self.host}: ready.")
        elif event.state == "failed":
            self.notify(f"The engine failed: {event.describe()}.", severity="error", timeout=10)
            self.switch_mode("service")

    def _applied(self, result: ApplyResult) -> None:
        self._settled(result.event)

    def action_view(self, name: str) -> None:
        if self.service is None:
            self.notify("Pick a host first.", severity="warning")
            return
        if name in VIEWS:
            self.switch_mode(name)

    def action_start(self) -> None:
        timeout = self.settings.ready_timeout_s
        self.run_service_action(
            "start",
            lambda: self.service.start(wait=True, timeout=timeout),  # type: ignore[union-attr]
            self._settled,
        )

    def action_restart(self) -> None:
        self.confirm(
            f"Restart the engine on {self.host}?",
            "It stops serving until it is ready again.",
            lambda: self.run_service_action(
                "restart",
                lambda: self.service.restart(wait=True, timeout=self.settings.ready_timeout_s),  # type: ignore[union-attr]
                self._settled,
            ),
        )

    def action_stop(self) -> None:
        self.confirm(
            f"Stop the engine on {self.host}?",
            "Requests in flight are cut off.",
            lambda: self.run_service_action("stop", lambda: self.service.stop()),  # type: ignore[union-attr]
        )

    def action_rollback(self) -> None:
        self.run_service_action("rollback check", self._rollback_diff, self._confirm_rollback)

    async def _rollback_diff(self) -> str:
        from console.service.flags import unified_diff

        store = await self.session_service().store()
        current, last_good = await store.current(), await store.last_good()
        if last_good is None:
            raise ConfigError(
                f"There is no last-good config for {self.host} yet (it is kept when flags "
                "are applied), so there is nothing to roll back to."
            )
        diff = unified_diff(current.flags if current else {}, last_good.flags, "launch.json")
        return diff or "(the last-good flags equal the current ones; restarting with them)"

    def _confirm_rollback(self, diff: str) -> None:
        self.confirm(
            f"Roll back {self.host} to the last-good flags?",
            diff,
            lambda: self.run_service_action(
                "rollback",
                lambda: self.service.rollback(timeout=self.settings.ready_timeout_s),  # type: ignore[union-attr]
                self._applied,
            ),
            diff=True,
        )

    def apply_plan(
        self,
        plan: FlagPlan,
        on_done: Callable[[bool], None] | None = None,
        *,
        baseline: bool = False,
    ) -> None:
        def done(result: ApplyResult) -> None:
            self._applied(result)
            if on_done is not None:
                on_done(result.ok)

        timeout = self.settings.ready_timeout_s
        if not baseline:
            self.run_service_action(
                "apply",
                lambda: self.service.apply(plan, timeout=timeout),  # type: ignore[union-attr]
                done,
            )
            return

        def compared(outcome: BaselineApply) -> None:
            done(outcome.result)
            if outcome.rows:
                self.push_screen(
                    InfoScreen(
                        "Baseline before and after", "\n".join(comparison_lines(outcome.rows))
                    )
                )

        self.run_service_action(
            "apply with baseline",
            lambda: apply_with_baseline(
                self.service,  # type: ignore[arg-type]
                plan,
                timeout=timeout,
                store=self.run_store(),
                on_note=lambda text: self.notify(text),
            ),
            compared,
        )

    def action_cancel(self) -> None:
        worker = self._action_worker
        if worker is None or worker.is_finished:
            self.notify("Nothing is running.")
            return
        worker.cancel()

    def confirm(
        self, question: str, detail: str, then: Callable[[], object], *, diff: bool = False
    ) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                then()

        self.push_screen(ConfirmScreen(question, detail, diff=diff), done)

    def action_keys(self) -> None:
        if not isinstance(self.screen, KeysScreen):
            self.push_screen(KeysScreen())

    def action_next_theme(self) -> None:
        ours = [n for n in ("dark", "light", "high-contrast") if n in self.available_themes]
        names = ours or sorted(self.available_themes)
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"Theme: {self.theme}")

    async def action_quit_console(self) -> None:
        self.exit(0)

    async def on_unmount(self) -> None:
        # Close the session only: the service keeps running.
        for worker in list(self.workers):
            worker.cancel()
        if self.service is not None:
            with contextlib.suppress(Exception):
                await self.service.close()
        if self.transport is not None:
            with contextlib.suppress(Exception):
                await self.transport.close()
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.close()


async def run_console(
    host: str | None, theme: str | None = None, accept_new_host_key: bool = False
) -> int:
    settings = load_settings()
    app = SpecConsoleApp(
        host, settings=settings, theme=theme, accept_new_host_key=accept_new_host_key
    )
    result = await app.run_async()
    return result or 0
