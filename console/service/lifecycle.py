"""The service lifecycle as a state machine fed by supervisor state, log lines and /health.

    stopped -> starting -> loading (percent, when the engine prints it) -> ready
                     \\------------------\\---------> failed (exit code + last log lines)

Inputs arrive from whoever watches the host (`follow.py`); every change is published as
a `LifecycleEvent` on a `Broadcast` (the service's own, so one subscription sees every
restart), so the CLI prints them and the TUI renders them without knowing where they
came from. The rules that turn one reading of the host into a state (`exited_event`,
`loading_percent`, `HEALTHY`) are module functions, so `EngineService.status()` applies
exactly the ones the machine does.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from console.backends.logparse import LoadingProgress, LogEvent, Ready
from console.events import Broadcast
from console.service.supervisor import SupervisorState

State = Literal["stopped", "stopping", "starting", "loading", "ready", "failed"]
TERMINAL: frozenset[State] = frozenset({"ready", "failed", "stopped"})
LOG_TAIL = 50
# How far back a failed start's log is searched for its root cause: vLLM's API server
# prints a long traceback after the failing process's own error.
FAILURE_LINES = 4000
# (root-cause line, hint sentence) from a failed start's log, by the engine's adapter.
Diagnose = Callable[[Sequence[str]], tuple[str, str]]
HEALTHY = "/health answers 200"


@dataclass(frozen=True)
class LifecycleEvent:
    state: State
    percent: int | None = None  # loading progress, when known
    message: str = ""
    exit_code: int | None = None
    log_tail: tuple[str, ...] = ()
    at: float = field(default_factory=time.time)
    root_cause: str = ""  # a failure's first fatal/ERROR line of the failing process
    hint: str = ""  # a sentence for a failure the engine's adapter knows

    def describe(self) -> str:
        text = self.state
        if self.state == "loading" and self.percent is not None:
            text += f" {self.percent}%"
        if self.state == "failed" and self.exit_code is not None:
            text += f" (exit code {self.exit_code})"
        return f"{text}: {self.message}" if self.message else text


def exited_event(
    exit_code: int | None, log_tail: Iterable[str] = (), *, diagnose: Diagnose | None = None
) -> LifecycleEvent:
    """The engine process is gone: failed, with its exit code and last log lines (and,
    with `diagnose`, the root-cause line and hint found in all of `log_tail`)."""
    code = "an unknown code" if exit_code is None else f"code {exit_code}"
    lines = list(log_tail)
    root, hint = diagnose(lines) if diagnose is not None else ("", "")
    return LifecycleEvent(
        "failed",
        message=f"the engine exited with {code}",
        exit_code=exit_code,
        log_tail=tuple(lines[-LOG_TAIL:]),
        root_cause=root,
        hint=hint,
    )


def log_segments(line: str) -> list[str]:
    """tqdm progress bars redraw with carriage returns inside one "line"."""
    return [segment for segment in line.split("\r") if segment.strip()]


def loading_percent(
    lines: Iterable[str], parse_log: Callable[[str], LogEvent | None]
) -> int | None:
    """How far weight loading got, by the last progress line in `lines` (None: no sign)."""
    percent = None
    for line in lines:
        for segment in log_segments(line):
            event = parse_log(segment)
            if isinstance(event, LoadingProgress):
                percent = event.percent
    return percent


class Lifecycle:
    """One start's state machine; every change goes to `events` (pass the service's
    broadcast so its subscribers see it; by default the machine has its own)."""

    def __init__(
        self,
        parse_log: Callable[[str], LogEvent | None],
        initial: State = "stopped",
        *,
        events: Broadcast[LifecycleEvent] | None = None,
        diagnose: Diagnose | None = None,
    ):
        self._parse_log = parse_log
        self._diagnose = diagnose
        self.current = LifecycleEvent(initial)
        self.history: list[LifecycleEvent] = [self.current]
        self.log_lines: deque[str] = deque(maxlen=LOG_TAIL)
        self.events: Broadcast[LifecycleEvent] = events if events is not None else Broadcast()

    @property
    def state(self) -> State:
        return self.current.state

    def _emit(self, event: LifecycleEvent) -> None:
        same = (event.state, event.percent) == (self.current.state, self.current.percent)
        if same and event.state != "failed":
            return
        self.current = event
        self.history.append(event)
        self.events.publish(event)

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
                self._emit(exited_event(sup.exit_code, self.log_lines, diagnose=self._diagnose))
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
            self._emit(LifecycleEvent("ready", message=HEALTHY))

    def fail(self, message: str, log_tail: list[str] | None = None) -> None:
        """A failure decided outside the machine (e.g. timed out waiting)."""
        tail = tuple(log_tail) if log_tail is not None else tuple(self.log_lines)
        exit_code = self.current.exit_code
        self._emit(LifecycleEvent("failed", message=message, exit_code=exit_code, log_tail=tail))

    def with_log_tail(self, lines: list[str]) -> None:
        """Replace a failure's log tail with the authoritative one read from the host (the
        root cause and hint are looked for in all of `lines`)."""
        if self.state == "failed" and lines:
            cur = self.current
            root, hint = cur.root_cause, cur.hint
            if self._diagnose is not None:
                found_root, found_hint = self._diagnose(lines)
                root, hint = found_root or root, found_hint or hint
            self.current = replace(
                cur, log_tail=tuple(lines[-LOG_TAIL:]), root_cause=root, hint=hint
            )
            self.history[-1] = self.current
