"""The console's one publish/subscribe mechanism.

Lifecycle events, live samples and anything else that several readers follow go through
a `Broadcast`: the producer calls `publish(item)`; each reader opens a subscription
(`async with broadcast.subscribe() as sub: async for item in sub: ...`) and leaves it by
leaving the block. Nobody mutates a list of callbacks, and a slow reader cannot stall the
producer: a subscription holds at most `backlog` items and drops the oldest beyond that,
counting them in `dropped` so the reader can say so. `close()` ends every open
subscription's iteration (after what it already holds).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_BACKLOG = 10_000


class Subscription(Generic[T]):
    """Every item published while the subscription is open, in order."""

    def __init__(self, backlog: int = DEFAULT_BACKLOG) -> None:
        self._items: deque[T] = deque()
        self._ready = asyncio.Event()
        self._backlog = backlog
        self._closed = False
        self.dropped = 0

    def _put(self, item: T) -> None:
        if len(self._items) >= self._backlog:
            self._items.popleft()
            self.dropped += 1
        self._items.append(item)
        self._ready.set()

    def _close(self) -> None:
        self._closed = True
        self._ready.set()

    def pending(self) -> list[T]:
        """What has arrived and not been read yet, without waiting."""
        items = list(self._items)
        self._items.clear()
        if not self._closed:
            self._ready.clear()
        return items

    def __aiter__(self) -> Subscription[T]:
        return self

    async def __anext__(self) -> T:
        while not self._items:
            if self._closed:
                raise StopAsyncIteration
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()


class Broadcast(Generic[T]):
    """One producer, any number of subscriptions; see the module docstring."""

    def __init__(self, backlog: int = DEFAULT_BACKLOG) -> None:
        self._subs: set[Subscription[T]] = set()
        self._backlog = backlog

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    def publish(self, item: T) -> None:
        for sub in list(self._subs):
            sub._put(item)

    def open(self) -> Subscription[T]:
        """A subscription the caller must end with `unsubscribe` (prefer `subscribe`)."""
        sub: Subscription[T] = Subscription(self._backlog)
        self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription[T]) -> None:
        self._subs.discard(sub)
        sub._close()

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription[T]]:
        sub = self.open()
        try:
            yield sub
        finally:
            self.unsubscribe(sub)

    def close(self) -> None:
        """End every open subscription (each still yields what it holds, then stops)."""
        for sub in list(self._subs):
            sub._close()
        self._subs.clear()
