"""What keeps the engine process alive on the host: the common supervisor interface."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol

from console.service.launch import LaunchConfig

RunState = Literal["running", "stopped", "exited"]


@dataclass(frozen=True)
class SupervisorState:
    state: RunState  # exited = ended on its own (crash, bad flag), not stopped by us
    pid: int | None = None
    exit_code: int | None = None  # when exited; None if unknown (killed by a signal)
    detail: str = ""


class Supervisor(Protocol):
    async def start(self, config: LaunchConfig) -> None:
        """Start the service with this config; it must outlive the console."""
        ...

    async def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds (None: the settings'
        `stop_timeout_s`). Stopping a stopped service is fine."""
        ...

    async def state(self) -> SupervisorState: ...

    def follow_logs(self, backlog: int = 0) -> AsyncIterator[str]:
        """Log lines as they are written, after the last `backlog` existing ones."""
        ...

    async def log_tail(self, lines: int = 50) -> list[str]: ...
