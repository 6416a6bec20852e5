"""The console app: one host's session, its shared state, and the requests screens send.

The app owns the session (profile, transport, service) and the state all screens show
(service status, the latest lifecycle event, the link, the running action) as reactives;
screens read it through `state.SessionState`, watch it, and never call each other or
the app: they post requests (`messages`), which the handlers here pass to the parts the
app is made of:

- `connection.HostConnection`: resolve a host, open it, ask about host keys;
- `monitor.ServiceMonitor`: status poll and link banner, server info, lifecycle events;
- `actions.ActionRunner` / `actions.EngineActions`: the one-action rule, progress,
  cancel and one-sentence errors, and what each engine action does;
- `live_feed.LiveFeed`: live samples, measured requests, the measure session and store.

Quitting closes only the session (port forward, HTTP client, SSH link); the engine
service keeps running, as with the headless CLI.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from textual import on
from textual.app import App, SystemCommand
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from console.analysis.gpu_sample import GpuSample
from console.analysis.records import LiveSample, RequestSample
from console.errors import ConsoleError, one_line
from console.service import EngineService, LifecycleEvent
from console.service.engine_service import ServiceStatus
from console.store import RunStore
from console.transport import Transport
from console.tui import keys, messages, view_modes
from console.tui.actions import LAUNCHES, ActionRunner, EngineActions
from console.tui.commands import ConsoleCommands
from console.tui.connection import Connector, HostConnection, default_connector
from console.tui.event_log import EventLog
from console.tui.field_keys import FieldKeys
from console.tui.live_feed import LiveFeed
from console.tui.measure_requests import MeasureRequests
from console.tui.messages import answer
from console.tui.monitor import ServiceMonitor
from console.tui.screens.connect import ConnectScreen
from console.tui.screens.keys import KeysScreen
from console.tui.screens.sampling import SamplingScreen
from console.tui.screens.views_menu import ViewsScreen
from console.tui.settings import TuiSettings, load_settings
from console.tui.themes import next_theme, use_themes

__all__ = ["SpecConsoleApp", "default_connector", "run_console"]  # one import path

VIEWS = ("dashboard", "service", "logs", "flags", "prompt", "sweeps", "history")
# App actions that mean nothing before a host is open: the picker's footer hides them.
NEEDS_HOST = frozenset(
    {"view", "views", "start", "restart", "stop", "rollback", "cancel", "doctor", "sampling"}
)
# Textual's own palette entries that ours replace ("Keys" lists ids, "Quit" keeps the
# engine running): listing both would show two entries of one name.
REPLACED_SYSTEM_COMMANDS = frozenset({"Keys", "Quit"})


class SpecConsoleApp(MeasureRequests, FieldKeys, App[int]):
    TITLE = "specconsole"
    CSS_PATH = "app.tcss"
    BINDINGS = keys.bindings("app")
    COMMANDS = App.COMMANDS | {ConsoleCommands}
    # Each view's screen (and its imports) is built the first time it is shown.
    MODES: ClassVar[dict[str, Callable[[], Screen]]] = view_modes.MODES  # type: ignore[assignment]

    # The session state screens read (state.SessionState); only the app's parts write it.
    # repaint=False: views follow these through watchers and refresh what they show; a
    # repainting app reactive would redraw the whole screen on every status poll and
    # every live sample (most of the dashboard's idle CPU).
    status: reactive[ServiceStatus | None] = reactive(None, always_update=True, repaint=False)
    lifecycle: reactive[LifecycleEvent | None] = reactive(None, repaint=False)
    server_info: reactive[dict | None] = reactive(None, repaint=False)
    # why the link is down, "" while it is up
    link_down: reactive[str] = reactive("", repaint=False)
    running: reactive[str] = reactive("", repaint=False)  # the action in progress, "" when none
    # bumped when live samples/requests change
    live_version: reactive[int] = reactive(0, repaint=False)
    # bumped when the lifecycle log (`events`) gains a line
    events_version: reactive[int] = reactive(0, repaint=False)

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
        web: bool | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings or load_settings()
        self.host = host
        self.accept_new_host_key = accept_new_host_key
        self.service: EngineService | None = service
        self.transport: Transport | None = None
        self._poll = poll
        self._live = live
        self._requested_theme = theme
        self.connect_problem = ""  # shown on the connect screen
        self.connection = HostConnection(self, connector)
        self.monitor = ServiceMonitor(self)
        self.runner = ActionRunner(self)
        self.engine = EngineActions(self, self.runner)
        self.live = LiveFeed(self)
        self.events = EventLog(self._events_changed)
        self._web = web  # None: ask the driver once it runs (textual-serve's is web)
        # Whether the newest failure came while the engine was being launched ("start")
        # or after it had been ready ("crash"); "" when the console did not see it happen.
        self.failure_kind = ""
        self.user_keymap = keys.check_keymap(dict(self.settings.keys))
        self.set_keymap(self.user_keymap)
        self.keymap = self.user_keymap

    @property
    def web_mode(self) -> bool:
        return self.is_web if self._web is None else self._web

    def _use_browser_keys(self) -> None:
        """In a browser, replace keys the browser takes (ctrl+r, ctrl+t, ctrl+l) with
        their browser-safe alternatives; the user's own remaps still win."""
        keymap = {**keys.web_keymap(), **self.user_keymap}
        self.set_keymap(keymap)
        self.keymap = keymap

    # -- start-up -------------------------------------------------------------------

    def on_mount(self) -> None:
        use_themes(self, self._requested_theme, self.settings.theme)
        if self.web_mode:
            self._use_browser_keys()
        if self.service is not None:
            self.connected()
        else:
            self.push_screen(ConnectScreen())
            if self.host:
                self.connection.connect(self.host)

    def connected(self) -> None:
        """The session is open (`service` set): show the dashboard, start the reads."""
        if isinstance(self.screen, ConnectScreen):
            self.pop_screen()
        self.switch_mode("dashboard")
        if self._poll:
            self.monitor.start()
        if self._live:
            self.live.start()
        self.monitor.read_server_info()

    def session_service(self) -> EngineService:
        """The connected host's service; a ConsoleError before a host is open."""
        if self.service is None:
            raise ConsoleError("Not connected to a host yet; pick one first.")
        return self.service

    # -- what screens read besides the reactives (state.SessionState) -----------------

    @property
    def live_samples(self) -> list[LiveSample]:
        return self.live.live_samples

    @property
    def requests(self) -> list[RequestSample]:
        return self.live.requests

    @property
    def gpu_samples(self) -> list[GpuSample]:
        return self.live.gpu_samples

    def ingest_live(
        self, samples: Sequence[LiveSample] = (), requests: Sequence[RequestSample] = ()
    ) -> None:
        """Add live samples and measured requests (from the live series or a test)."""
        self.live.ingest_live(samples, requests)

    def run_store(self) -> RunStore:
        return self.live.run_store()

    # -- requests from screens (messages) -----------------------------------------------

    def on_connect_to(self, request: messages.ConnectTo) -> None:
        self.connection.connect(request.host)

    def on_run_action(self, request: messages.RunAction) -> None:
        getattr(self.engine, request.action)()

    def on_confirm_and_run(self, request: messages.ConfirmAndRun) -> None:
        then = request.then
        then.origin = then.origin or request.origin
        self.engine.confirm(
            request.question, request.detail, lambda: self.post_message(then), diff=request.diff
        )

    def on_plan_flags(self, request: messages.PlanFlags) -> None:
        changes = request.changes
        self.runner.run_request(
            request,
            "diff",
            lambda _tick: self.session_service().plan(changes),
            messages.FlagsPlanned,
        )

    def on_apply_flags(self, request: messages.ApplyFlags) -> None:
        worker = self.engine.apply_plan(
            request.plan,
            on_done=lambda ok: answer(request, messages.FlagsApplied(ok)),
            baseline=request.baseline,
            options=request.options,
        )
        if worker is None:
            answer(request, messages.ActionRefused("apply"))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        # Workers catch their own errors; this is the net under them.
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(one_line(event.worker.error), severity="error")

    # -- what the failure panel calls a failure -----------------------------------------

    def _events_changed(self) -> None:
        self.events_version += 1

    def watch_lifecycle(self, old: LifecycleEvent | None, new: LifecycleEvent | None) -> None:
        if new is not None:
            self.events.add(new.describe(), new.at)
        if new is None or new.state != "failed":
            return
        if self.running in LAUNCHES or (old is not None and old.state in ("starting", "loading")):
            self.failure_kind = "start"
        elif (old is not None and old.state == "ready") or (
            self.status is not None and self.status.state == "ready"
        ):
            self.failure_kind = "crash"  # it had been serving
        else:
            self.failure_kind = ""  # the console did not see what came before

    def watch_status(self, old: ServiceStatus | None, new: ServiceStatus | None) -> None:
        if new is None or new.state != "failed" or (old is not None and old.state == "failed"):
            return
        if self.lifecycle is not None and self.lifecycle.state == "failed":
            return  # the lifecycle event already said which
        if old is not None:
            self.failure_kind = "crash" if old.state == "ready" else "start"

    # -- the palette ------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title not in REPLACED_SYSTEM_COMMANDS:
                yield command

    # -- key bindings (ids and keys in keys.py) ----------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Before a host is open there is no view or engine to act on: the picker's
        # footer and palette then offer only help, the palette, the theme and quit.
        return not (action in NEEDS_HOST and self.service is None)

    def action_view(self, name: str) -> None:
        if self.service is None:
            self.notify("Pick a host first.", severity="warning")
            return
        if name in VIEWS:
            self.switch_mode(name)

    def action_views(self) -> None:
        if self.service is None or isinstance(self.screen, ViewsScreen):
            return

        def chosen(name: str | None) -> None:
            if name:
                self.action_view(name)

        self.push_screen(ViewsScreen(), chosen)

    def action_start(self) -> None:
        self.engine.start()

    def action_restart(self) -> None:
        self.engine.restart()

    def action_stop(self) -> None:
        self.engine.stop()

    def action_rollback(self) -> None:
        self.engine.rollback()

    def action_calibrate(self) -> None:
        self.engine.calibrate()

    def action_doctor(self) -> None:
        self.engine.doctor()

    def action_cancel(self) -> None:
        self.runner.cancel()

    def action_sampling(self) -> None:
        if self.service is None or isinstance(self.screen, SamplingScreen):
            return
        self.push_screen(SamplingScreen(self.live.sampling()), self.live.use_sampling)

    def action_keys(self) -> None:
        if not isinstance(self.screen, KeysScreen):
            self.push_screen(KeysScreen())

    def action_next_theme(self) -> None:
        self.theme = next_theme(self)
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
        self.live.close()


async def run_console(
    host: str | None, theme: str | None = None, accept_new_host_key: bool = False
) -> int:
    settings = load_settings()
    app = SpecConsoleApp(
        host, settings=settings, theme=theme, accept_new_host_key=accept_new_host_key
    )
    result = await app.run_async()
    return result or 0
