"""The lifecycle state machine: transitions from supervisor state, logs and /health."""

from __future__ import annotations

import asyncio

from console.backends import get_backend
from console.events import Subscription
from console.service.lifecycle import Lifecycle, LifecycleEvent
from console.service.supervisor import SupervisorState

LOAD = "Loading safetensors checkpoint shards:  {p}% Completed | {d}/2 [00:01<00:01,  1.1s/it]"


def _machine() -> tuple[Lifecycle, Subscription[LifecycleEvent]]:
    machine = Lifecycle(get_backend("sglang").parse_log)
    return machine, machine.events.open()  # every event from here on


def test_start_load_ready_from_logs() -> None:
    m, sub = _machine()
    m.starting()
    m.feed_supervisor(SupervisorState("running", pid=10))
    m.feed_log("[2026-01-01 00:00:00] server_args=...")
    m.feed_log(LOAD.format(p=50, d=1))
    m.feed_log(LOAD.format(p=50, d=1))  # repeated frame: no new event
    m.feed_log(LOAD.format(p=100, d=2))
    m.feed_log("[2026-01-01 00:00:09] The server is fired up and ready to roll!")
    seen = sub.pending()
    assert [(e.state, e.percent) for e in seen] == [
        ("starting", None), ("loading", 50), ("loading", 100), ("ready", None),
    ]  # fmt: skip
    # Once ready, later log lines and health answers change nothing.
    m.feed_log(LOAD.format(p=0, d=0))
    m.feed_health(True)
    seen += sub.pending()
    assert m.state == "ready" and len(seen) == 4


def test_health_makes_it_ready_without_a_ready_line() -> None:
    m, _ = _machine()
    m.starting()
    m.feed_health(False)
    assert m.state == "starting"
    m.feed_health(True)
    assert m.state == "ready" and m.current.message == "/health answers 200"


def test_exit_while_loading_is_failed_with_code_and_log_tail() -> None:
    m, sub = _machine()
    m.starting()
    for i in range(60):
        m.feed_log(f"line {i}")
    m.feed_supervisor(SupervisorState("exited", pid=10, exit_code=2))
    assert m.state == "failed" and m.current.exit_code == 2
    assert len(m.current.log_tail) == 50 and m.current.log_tail[-1] == "line 59"
    assert "exit code 2" in m.current.describe()
    m.with_log_tail(["from", "host"])
    assert m.current.log_tail == ("from", "host")
    m.feed_supervisor(SupervisorState("running"))  # someone started it again
    seen = sub.pending()
    assert m.state == "starting" and seen[-1].state == "starting"


def test_stopped_underneath_and_timeout_failure() -> None:
    m, _ = _machine()
    m.starting()
    m.feed_supervisor(SupervisorState("stopped"))
    assert m.state == "stopped"
    m.starting()
    m.fail("not ready after 5 s")
    assert m.state == "failed" and m.current.exit_code is None


async def test_events_are_an_async_iterator() -> None:
    m, _ = _machine()

    async def collect() -> list[str]:
        async with m.events.subscribe() as events:
            return [e.state async for e in events]

    task = asyncio.create_task(collect())
    await asyncio.sleep(0)
    m.starting()
    m.feed_health(True)
    m.events.close()
    assert await asyncio.wait_for(task, 5) == ["starting", "ready"]
