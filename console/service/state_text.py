"""The service's state in words: one (state, detail) pair for the status bar, the
dashboard, the service view and `specconsole status`.

Two sources can say what the service is doing: the status poll (`EngineService.status()`)
and the lifecycle events of an action in progress. While an action runs its events are
newer than any poll, so they win; otherwise the poll does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: this module stays a pure function of its arguments
    from console.service import LifecycleEvent, ServiceStatus


def service_state(
    status: ServiceStatus | None, event: LifecycleEvent | None, running: bool
) -> tuple[str, str]:
    """(state, detail): `("loading", "40%")`, `("failed", "exit code 1")`, `("ready", "")`.

    `running` says an action (start, apply, rollback) is in progress, so `event` is the
    newest word on the state; `status` is the last poll, None before the first one."""
    if running and event is not None:
        detail = f"{event.percent}%" if event.percent is not None else ""
        return event.state, detail
    if status is None:
        return "unknown", "reading state…"
    detail = f"{status.percent}%" if status.percent is not None else ""
    if status.state == "failed" and status.exit_code is not None:
        detail = f"exit code {status.exit_code}"
    return status.state, detail
