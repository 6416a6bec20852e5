"""The shared state screens and widgets read, as a small typed interface.

The app holds one host's session state as reactives (so a change repaints every view
that shows it) and is the only writer. Screens see it only through `SessionState`: what
they may read, and `watch_state` for what they may follow. They never call the app;
requests go up as messages (`console.tui.messages`). This keeps screens free of any
import of the app module, which would make the two depend on each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, cast

from textual.dom import DOMNode

from console.analysis.gpu_sample import GpuSample
from console.analysis.records import LiveSample, RequestSample
from console.service import EngineService, LifecycleEvent
from console.service.engine_service import ServiceStatus
from console.store import RunStore
from console.tui.settings import TuiSettings

# The reactives a view may follow; each change calls the watcher with the new value.
Watched = Literal[
    "status", "lifecycle", "server_info", "link_down", "running", "live_version", "events_version"
]


class SessionState(Protocol):
    """One host's session as screens see it (read-only by convention: the app writes)."""

    settings: TuiSettings
    keymap: dict[str, str]
    host: str | None
    connect_problem: str  # why the last connect failed, "" when it did not
    status: ServiceStatus | None  # the last polled service state
    lifecycle: LifecycleEvent | None  # the newest lifecycle event
    server_info: dict | None  # the engine's /get_server_info while it is ready
    link_down: str  # why the link is down, "" while it is up
    running: str  # the action in progress, "" when none
    failure_kind: str  # "start" or "crash": when the newest failure came; "" unknown

    @property
    def service(self) -> EngineService | None: ...

    @property
    def live_samples(self) -> list[LiveSample]: ...

    @property
    def requests(self) -> list[RequestSample]: ...

    @property
    def gpu_samples(self) -> list[GpuSample]: ...  # [] on a host without GPU telemetry

    def run_store(self) -> RunStore: ...


def session_of(node: DOMNode) -> SessionState:
    """The session state of the app `node` runs in."""
    return cast(SessionState, node.app)


def watch_state(node: DOMNode, name: Watched, callback: Callable[[Any], object]) -> None:
    """Call `callback` on `node`'s behalf whenever the session's `name` changes."""
    node.watch(node.app, name, callback, init=False)


def config_id_of(status: ServiceStatus | None) -> str | None:
    """The id of the launch config a polled status names: when it changes, the flags
    were changed (here, or by `specconsole set`/`rollback` from another shell)."""
    config = status.config if status is not None else None
    return config.id if config is not None else None


def watch_config(node: DOMNode, callback: Callable[[], object]) -> None:
    """Call `callback` on `node`'s behalf whenever a polled status names a new launch
    config (the flags changed here or from another shell)."""
    last = [config_id_of(session_of(node).status)]

    def changed(status: ServiceStatus | None) -> None:
        config_id = config_id_of(status)
        if config_id != last[0]:
            last[0] = config_id
            if config_id is not None:
                callback()

    watch_state(node, "status", changed)
