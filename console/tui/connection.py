"""Opening a host: resolve the name, open its transport and service, read its state.

An unknown host key is asked about in a modal with its fingerprint (never accepted
silently unless the user said so on the command line); a changed key, an unreachable
host or a slow one leaves the reason on the connect screen, with the picker back, so
the operator can pick again without restarting the console.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from console.config import HostProfile
from console.errors import ConsoleError, one_line
from console.hosts import resolve_host
from console.service import EngineService
from console.settings import ConsoleSettings
from console.transport import HostKeyChanged, HostKeyInfo, Transport
from console.tui.monitor import note_first_status
from console.tui.screens.connect import ConnectScreen
from console.tui.screens.modals import HostKeyScreen

if TYPE_CHECKING:
    from console.tui.app import SpecConsoleApp

Connector = Callable[[HostProfile, Callable[[HostKeyInfo], Awaitable[bool]]], Any]


def default_connector(
    profile: HostProfile,
    confirm: Callable[[HostKeyInfo], Awaitable[bool]],
    settings: ConsoleSettings | None = None,
) -> tuple[EngineService, Transport]:
    # The session outlives any one block (it is closed on unmount), so the opened pair
    # is taken as it is rather than entered.
    opened = EngineService.open(profile, confirm_host_key=confirm, settings=settings)
    return opened.service, opened.transport


class HostConnection:
    """Connects the app to one host; on success hands the session to `app.connected`."""

    def __init__(self, app: SpecConsoleApp, connector: Connector = default_connector) -> None:
        if connector is default_connector:
            # The TUI's settings (tui.toml) are the core's too: timeouts, backoff, polls.
            connector = functools.partial(default_connector, settings=app.settings)
        self.app = app
        self._connector = connector

    def connect(self, host: str) -> None:
        """Resolve `host`, open its transport and read its state (host keys asked here)."""

        app = self.app
        try:
            profile = resolve_host(host)
        except ConsoleError as exc:
            self._connect_failed(str(exc))
            return
        app.host = profile.name
        app.connect_problem = ""
        app.run_worker(
            self._connect_worker(profile),
            group="connect",
            exclusive=True,
            exit_on_error=False,
            description="connecting",
        )

    async def _connect_worker(self, profile: HostProfile) -> None:
        app = self.app
        self._set_connect_text(f"Connecting to {profile.name}…")
        service, transport = self._connector(profile, self._confirm_host_key)
        try:
            status = await asyncio.wait_for(service.status(), app.settings.link_timeout_s + 30)
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
        app.service, app.transport = service, transport
        # Another writer's lease on the service: "waiting for the lease held by ..." and
        # "broke a stale lease ..." reach the operator as the CLI's stderr lines do.
        service.on_note = lambda text: app.notify(text, severity="warning")
        note_first_status(app, status)
        app.status = status
        app.connected()

    def _set_connect_text(self, text: str) -> None:
        screen = self.app.screen
        if isinstance(screen, ConnectScreen):
            screen.show_message(text)

    def _connect_failed(self, message: str) -> None:
        app = self.app
        app.connect_problem = message
        app.notify(message, severity="error", timeout=10)
        self._set_connect_text(message)
        if isinstance(app.screen, ConnectScreen):
            app.screen.show_picker()

    async def _confirm_host_key(self, info: HostKeyInfo) -> bool:
        """The transport asks before trusting an unknown key: a modal with its fingerprint."""
        app = self.app
        if app.accept_new_host_key:
            app.notify(f"Trusting new host key: {info.describe()}.", severity="warning")
            return True
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def done(result: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(result))

        app.push_screen(HostKeyScreen(info), done)
        return await answer
