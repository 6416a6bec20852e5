"""The one event mechanism and the one settings object the core layers share."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from console.events import Broadcast
from console.settings import Backoff, ConsoleSettings
from console.tui.settings import TuiSettings


async def test_each_subscription_gets_every_item_in_order_and_leaving_unsubscribes():
    bus: Broadcast[int] = Broadcast()
    bus.publish(0)  # nobody listens yet: nobody gets it
    async with bus.subscribe() as a, bus.subscribe() as b:
        assert bus.subscribers == 2
        for i in (1, 2, 3):
            bus.publish(i)
        assert [await anext(a) for _ in range(3)] == [1, 2, 3]
        assert b.pending() == [1, 2, 3]
        assert b.pending() == []
    assert bus.subscribers == 0
    bus.publish(4)
    assert a.pending() == []


async def test_a_slow_reader_loses_the_oldest_items_and_is_told_how_many():
    bus: Broadcast[int] = Broadcast(backlog=3)
    async with bus.subscribe() as sub:
        for i in range(5):
            bus.publish(i)
        assert sub.pending() == [2, 3, 4]
        assert sub.dropped == 2


async def test_close_ends_iteration_after_what_is_held():
    bus: Broadcast[str] = Broadcast()
    async with bus.subscribe() as sub:

        async def read() -> list[str]:
            return [item async for item in sub]

        reader = asyncio.create_task(read())
        bus.publish("a")
        await asyncio.sleep(0)
        bus.publish("b")
        bus.close()
        assert await asyncio.wait_for(reader, 2) == ["a", "b"]


def test_backoff_doubles_to_its_cap():
    assert list(itertools.islice(Backoff().delays(), 7)) == [0.5, 1, 2, 4, 8, 10, 10]
    assert list(itertools.islice(Backoff(start_s=1, factor=3, max_s=5).delays(), 3)) == [1, 3, 5]


def test_tui_settings_extend_the_core_settings():
    tui = TuiSettings.model_validate({"ready_timeout_s": 30, "backoff": {"max_s": 4}})
    assert isinstance(tui, ConsoleSettings)
    assert tui.ready_timeout_s == 30 and tui.backoff.max_s == 4
    with pytest.raises(ValueError):
        ConsoleSettings.model_validate({"ready_timeout": 30})  # a typo is refused
