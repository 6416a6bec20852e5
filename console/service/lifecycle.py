"""The service lifecycle as a state machine fed by supervisor state, log lines and /health.

    stopped -> starting -> loading (percent, when the engine prints it) -> ready
                     \\------------------\\---------> failed (exit code + last log lines)

Inputs arrive from whoever watches the host (`follow.py`); every change is published as
a `LifecycleEvent` to callbacks and to async-iterator subscribers, so the CLI prints
them and the TUI can render them without knowing where they came from.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

from console.backends.logparse import LoadingProgress, LogEvent, Ready
from console.service.supervisor import SupervisorState

State = Literal["stopped", "stopping", "starting", "loading", "ready", "failed"]
TERMINAL: frozenset[State] = frozenset({"ready", "failed", "stopped"})
LOG_TAIL = 50


@dataclass(frozen=True)
class LifecycleEvent:
    state: State
    percent: int | None = None  # loading progress, when known
    message: str = ""
    exit_code: int | None = None
    log_tail: tuple[str, ...] = ()
    at: float = field(default_factory=time.time)

    def describe(self) -> str:
        text = self.state
        if self.state == "loading" and self.percent is not None:
            text += f" {self.percent}%"
        if self.state == "failed" and self.exit_code is not None:
            text += f" (exit code {self.exit_code})"
        return f"{text}: {self.message}" if self.message else text


Listener = Callable[[LifecycleEvent], None]


class Lifecycle:
    def __init__(self, parse_log: Callable[[str], LogEvent | None], initial: State = "stopped"):
        self._parse_log = parse_log
        self.current = LifecycleEvent(initial)
        self.history: list[LifecycleEvent] = [self.current]
        self.log_lines: deque[str] = deque(maxlen=LOG_TAIL)
        self._listeners: list[Listener] = []
        self._queues: list[asyncio.Queue[LifecycleEvent | None]] = []

    @property
    def state(self) -> State:
        return self.current.state

    # -- observing ------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def events(self) -> AsyncIterator[LifecycleEvent]:
        """Every event from now on; ends when `close()` is called."""
        queue: asyncio.Queue[LifecycleEvent | None] = asyncio.Queue()
        self._queues.append(queue)
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            self._queues.remove(queue)

    def close(self) -> None:
        for queue in self._queues:
            queue.put_nowait(None)

    def _emit(self, event: LifecycleEvent) -> None:
        same = (event.state, event.percent) == (self.current.state, self.current.percent)
        if same and event.state != "failed":
            return
        self.current = event
        self.history.append(event)
        for listener in self._listeners:
            listener(event)
        for queue in self._queues:
            queue.put_nowait(event)

    # -- inputs ---------------------------------------------------------------------

    def starting(self, message: str = "") -> None:
        """We just asked the supervisor to start the engine."""
        self.log_lines.clear()
        self._emit(LifecycleEvent("starting", message=message))

    def feed_supervisor(self, sup: SupervisorState) -> None:
        if sup.state == "running":
            if self.state in ("stopped", "failed"):
                self._emit(LifecycleEvent("starting", message=sup.detail))
        elif sup.state == "exited":
            if self.state != "failed":
                code = "an unknown code" if sup.exit_code is None else f"code {sup.exit_code}"
                self._emit(
                    LifecycleEvent(
                        "failed",
                        message=f"the engine exited with {code}",
                        exit_code=sup.exit_code,
                        log_tail=tuple(self.log_lines),
                    )
                )
        elif self.state != "stopped":
            self._emit(LifecycleEvent("stopped", message=sup.detail))

    def feed_log(self, line: str) -> None:
        self.log_lines.append(line)
        event = self._parse_log(line)
        if self.state not in ("starting", "loading"):
            return
        if isinstance(event, LoadingProgress):
            self._emit(
                LifecycleEvent(
                    "loading",
                    percent=event.percent,
                    message=f"loading weights {event.done}/{event.total}",
                )
            )
        elif isinstance(event, Ready):
            self._emit(LifecycleEvent("ready", message="the engine reports ready"))

    def feed_health(self, ok: bool) -> None:
        if ok and self.state in ("starting", "loading"):
            self._emit(LifecycleEvent("ready", message="/health answers 200"))

    def fail(self, message: str, log_tail: list[str] | None = None) -> None:
        """A failure decided outside the machine (e.g. timed out waiting)."""
        tail = tuple(log_tail) if log_tail is not None else tuple(self.log_lines)
        exit_code = self.current.exit_code
        self._emit(LifecycleEvent("failed", message=message, exit_code=exit_code, log_tail=tail))

    def with_log_tail(self, lines: list[str]) -> None:
        """Replace a failure's log tail with the authoritative one read from the host."""
        if self.state == "failed" and lines:
            cur = self.current
            self.current = LifecycleEvent(
                "failed", cur.percent, cur.message, cur.exit_code, tuple(lines[-LOG_TAIL:]), cur.at
            )
            self.history[-1] = self.current
