"""Background reads that keep the session state true: the service status every few
seconds (and a banner while the link is down), the engine's /get_server_info while it is
ready, and the service's lifecycle events as they happen.

Each runs in an app worker and writes the app's reactives, so every screen sees the
change; none of them ever raises into the UI (a link problem is the banner, any other
error one notification).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from console.errors import TransportError, one_line
from console.service.engine_service import ServiceStatus

if TYPE_CHECKING:
    from console.tui.app import SpecConsoleApp


def note_first_status(app: SpecConsoleApp, status: ServiceStatus) -> None:
    """The lifecycle log starts with the session: it first says what the engine was doing
    then, so an engine started before (by the CLI) does not read as no engine at all."""
    pid = f", pid {status.pid}" if status.pid is not None else ""
    app.events.add(f"{status.state} when the console opened{pid}")


class ServiceMonitor:
    def __init__(self, app: SpecConsoleApp) -> None:
        self.app = app

    def start(self) -> None:
        """Poll the status and follow the lifecycle, each in its own worker."""
        self.app.run_worker(
            self._poll_status(),
            group="poll",
            exclusive=True,
            exit_on_error=False,
            description="status",
        )
        self.app.run_worker(
            self._follow_lifecycle(),
            group="lifecycle",
            exclusive=True,
            exit_on_error=False,
            description="lifecycle",
        )

    async def _poll_status(self) -> None:
        """Read the service state every few seconds; a slow or dead link shows a banner.
        Any other error is shown once, not every poll."""
        app = self.app
        service = app.service
        if service is None:
            return
        settings = app.settings
        down_since: float | None = None
        last_error = ""
        while True:
            if not service.busy:
                try:
                    status = await asyncio.wait_for(service.status(), settings.link_timeout_s)
                except (TransportError, TimeoutError) as exc:
                    down_since = down_since or time.monotonic()
                    reason = str(exc) if isinstance(exc, TransportError) else "no answer in time"
                    app.link_down = (
                        f"Link to {app.host} is down ({reason.rstrip('.')}); reconnecting…"
                    )
                except Exception as exc:
                    if one_line(exc) != last_error:
                        last_error = one_line(exc)
                        app.notify(last_error, severity="error")
                else:
                    last_error = ""
                    if down_since is not None:
                        app.notify(
                            f"Link to {app.host} is back after "
                            f"{time.monotonic() - down_since:.0f} s."
                        )
                        down_since = None
                    app.link_down = ""
                    self.on_status(status)
            await asyncio.sleep(settings.status_poll_s)

    def on_status(self, status: ServiceStatus) -> None:
        """Take a new status; the server info is read again when a new engine is ready."""
        app = self.app
        previous = app.status
        if previous is None:
            note_first_status(app, status)
        app.status = status
        if status.state == "ready" and (
            previous is None or previous.state != "ready" or previous.pid != status.pid
        ):
            self.read_server_info()
        elif status.state != "ready":
            app.server_info = None

    def read_server_info(self) -> None:
        self.app.run_worker(
            self._read_server_info(),
            group="info",
            exclusive=True,
            exit_on_error=False,
            description="server info",
        )

    async def _read_server_info(self) -> None:
        app = self.app
        if app.service is None:
            return
        try:
            app.server_info = await asyncio.wait_for(
                app.service.server_info(), app.settings.link_timeout_s
            )
        except Exception:
            app.server_info = None  # not ready or unreachable: the status bar says which

    async def _follow_lifecycle(self) -> None:
        async with self.app.session_service().subscribe() as events:
            async for event in events:
                self.app.lifecycle = event

    def refresh_status_soon(self) -> None:
        """One status read now (after an action), without waiting for the next poll."""
        app = self.app
        service = app.service
        if service is None:
            return

        async def read() -> None:
            with contextlib.suppress(Exception):  # the poll loop reports the link
                self.on_status(
                    await asyncio.wait_for(service.status(), app.settings.link_timeout_s)
                )

        app.run_worker(read(), group="status-once", exclusive=True, exit_on_error=False)
