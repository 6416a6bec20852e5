"""The live series: one timestamped stream of decode figures from everything that knows
them, for the dashboard's charts, `specconsole watch` and the run store.

An operator asking "why is it 32 tok/s now?" needs the figures as the engine runs, from
the engine's own point of view, without a benchmark in the way. Three sources feed one
stream, each sample tagged with where it came from (`LiveSample.source`):

- `log`: the engine's `Decode batch` lines (SGLang's format, which ours prints too) and
  vLLM's `SpecDecoding metrics` lines, read from the followed service log;
- `metrics`: `/metrics` scraped every `scrape_interval` seconds, one sample per interval
  in which the engine decoded, from counter deltas (see `live_samples`);
- `request`: the console's own measured requests, handed in with `record_request`.

The link to a GPU host drops (sshd restarts, VPNs, laptops sleeping). The series does not
end then: each source retries with the settings' backoff (0.5 s doubling to 10 s by
default) and the series says
so in the stream itself, as *link samples*: `LiveSample`s with every figure None and a
note that starts with `LINK_DOWN` ("link down, reconnecting: <why>") or `RECONNECTED`
("reconnected after 4.2 s"). One link sample marks the start of an outage however many
sources noticed it, and one its end, once every source that lost the link has it back.
They go to the ring buffer, subscribers and the sink like any sample, so a stored series
shows where its gap came from; `is_link_sample()` tells them apart, and `link_down` /
`link_note` give the current state for a banner.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Literal

from console.analysis.records import LiveSample, RequestSample
from console.errors import ConsoleError, TransportError
from console.events import Broadcast, Subscription
from console.measure.live_samples import (
    sample_from_log_line,
    sample_from_request,
    sample_from_scrapes,
)
from console.service.engine_client import EngineRequestError, MetricsScrape
from console.service.engine_service import EngineService
from console.settings import DEFAULT_SETTINGS, ConsoleSettings

logger = logging.getLogger(__name__)

Sink = Callable[[LiveSample], Awaitable[None]]
StreamName = Literal["log", "metrics"]

# A sample taken while a method warms the engine up (or just after: log lines arrive
# late) carries this note: it is the console's own warm-up, not traffic, and the charts
# and "now" figures leave it out.
WARMUP_NOTE = "warm-up"
WARMUP_GRACE_S = 2.0
LINK_DOWN = "link down, reconnecting"
RECONNECTED = "reconnected after"
DEFAULT_CAPACITY = 3600  # an hour of 1 Hz samples
SUBSCRIBER_BACKLOG = 10_000  # a subscriber this far behind loses the oldest samples
UNAVAILABLE_RETRY = 10.0  # an engine without /metrics (SGLang without --enable-metrics)


def is_warmup_sample(sample: LiveSample) -> bool:
    """True for a sample of the console's own warm-up request (see `LiveSeries.warmup`)."""
    return sample.note.startswith(WARMUP_NOTE)


def is_link_sample(sample: LiveSample) -> bool:
    """True for the series' link-state samples (no figures; the note says what changed)."""
    return sample.note.startswith((LINK_DOWN, RECONNECTED))


class LiveSeries:
    """The live series of one engine service.

    `await series.run()` follows the log and scrapes /metrics (the `sources` chosen) until
    cancelled. Samples are kept in a ring buffer (`snapshot`), pushed to subscriptions
    (`async with series.subscribe() as sub: async for sample in sub`) and, when `sink` is
    given, awaited into it one at a time in emission order (`RunStore.add_live` bound to a
    run id, say); a failing sink is logged and counted in `sink_errors`, never stops the
    series. Reconnects wait `settings.backoff` between tries.
    """

    def __init__(
        self,
        service: EngineService,
        *,
        scrape_interval: float = 2.0,
        sink: Sink | None = None,
        sources: Collection[StreamName] = ("log", "metrics"),
        capacity: int = DEFAULT_CAPACITY,
        settings: ConsoleSettings = DEFAULT_SETTINGS,
    ) -> None:
        unknown = set(sources) - {"log", "metrics"}
        if unknown:
            raise ValueError(f"unknown live sources: {sorted(unknown)}")
        if scrape_interval <= 0:
            raise ValueError("scrape_interval must be positive")
        self.service = service
        self.scrape_interval = scrape_interval
        self.sink = sink
        self.sources = tuple(sources)
        self.settings = settings
        self._ring: deque[LiveSample] = deque(maxlen=capacity)
        self._broadcast: Broadcast[LiveSample] = Broadcast(SUBSCRIBER_BACKLOG)
        self._sink_queue: deque[LiveSample] = deque()
        self._sink_task: asyncio.Task[None] | None = None
        self.sink_errors = 0
        self._down: set[StreamName] = set()
        self._down_since: float | None = None
        self.link_note = ""  # the last link sample's note ("" before any)
        self._warmups = 0  # warm-ups in flight
        self._warmup_until = 0.0  # samples before this (wall clock) are still warm-up

    # -- reading ----------------------------------------------------------------------

    def snapshot(self, since: float | None = None) -> list[LiveSample]:
        """The buffered samples (oldest first); with `since`, only those with `t > since`,
        so a poller can pass the last `t` it has."""
        if since is None:
            return list(self._ring)
        return [s for s in self._ring if s.t > since]

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription[LiveSample]]:
        """`async with series.subscribe() as sub: async for sample in sub: ...`; `pending()`
        takes what has arrived without waiting, `dropped` counts what a slow reader lost."""
        async with self._broadcast.subscribe() as sub:
            yield sub

    @property
    def subscribers(self) -> int:
        """How many subscriptions are open."""
        return self._broadcast.subscribers

    @property
    def link_down(self) -> bool:
        """Whether some source has lost the link and not yet got it back."""
        return bool(self._down)

    # -- writing ----------------------------------------------------------------------

    def record_request(self, sample: RequestSample) -> LiveSample:
        """Add one of the console's measured requests to the series (source `request`)."""
        live = sample_from_request(sample)
        self._emit(live)
        return live

    @contextlib.contextmanager
    def warmup(self):
        """Mark what the series takes while the block runs (and `WARMUP_GRACE_S` after,
        for log lines that arrive late) as warm-up, not traffic."""
        self._warmups += 1
        try:
            yield
        finally:
            self._warmups -= 1
            self._warmup_until = time.time() + WARMUP_GRACE_S

    def _emit(self, sample: LiveSample) -> None:
        if (
            (self._warmups or time.time() < self._warmup_until)
            and not is_link_sample(sample)
            and not is_warmup_sample(sample)
        ):
            note = f"{WARMUP_NOTE}: {sample.note}" if sample.note else WARMUP_NOTE
            sample = dataclasses.replace(sample, note=note)
        self._ring.append(sample)
        self._broadcast.publish(sample)
        if self.sink is not None:
            self._sink_queue.append(sample)
            self._start_sink()

    def _start_sink(self) -> None:
        if self.sink is None or not self._sink_queue:
            return
        if self._sink_task is not None and not self._sink_task.done():
            return
        # Without a running loop (a synchronous caller) run() or flush() drains it later.
        with contextlib.suppress(RuntimeError):
            self._sink_task = asyncio.get_running_loop().create_task(self._drain_sink())

    async def _drain_sink(self) -> None:
        while self._sink_queue and self.sink is not None:
            sample = self._sink_queue.popleft()
            try:
                await self.sink(sample)
            except Exception as exc:
                self.sink_errors += 1
                logger.warning("live sample not stored: %s", exc)

    async def flush(self) -> None:
        """Wait until every sample emitted so far has been handed to the sink."""
        if self.sink is None:
            return
        while self._sink_queue or (self._sink_task is not None and not self._sink_task.done()):
            self._start_sink()
            if self._sink_task is not None:
                await asyncio.shield(self._sink_task)

    # -- link state -------------------------------------------------------------------

    def _link_lost(self, stream: StreamName, reason: str) -> None:
        if not self._down:
            self._down_since = time.monotonic()
            why = reason.strip().rstrip(".")
            note = f"{LINK_DOWN}: {why}" if why else LINK_DOWN
            self.link_note = note
            self._emit(LiveSample(t=time.time(), source=stream, note=note))
        self._down.add(stream)

    def _link_back(self, stream: StreamName) -> None:
        if stream not in self._down:
            return
        self._down.discard(stream)
        if not self._down:
            took = time.monotonic() - (self._down_since or time.monotonic())
            self._down_since = None
            note = f"{RECONNECTED} {took:.1f} s"
            self.link_note = note
            self._emit(LiveSample(t=time.time(), source=stream, note=note))

    # -- running ----------------------------------------------------------------------

    async def run(self) -> None:
        """Follow the log and scrape /metrics until cancelled."""
        tasks = []
        if "log" in self.sources:
            tasks.append(asyncio.create_task(self._follow_log(), name="live-log"))
        if "metrics" in self.sources:
            tasks.append(asyncio.create_task(self._scrape(), name="live-metrics"))
        self._start_sink()
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task
            # Samples already taken still reach the store, unless that hangs.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.flush()), 5.0)

    async def _follow_log(self) -> None:
        backoff = self.settings.backoff
        delays = backoff.delays()
        delay = next(delays)

        def on_link(up: bool, text: str) -> None:
            if up:
                self._link_back("log")
            else:
                self._link_lost("log", f"the log stream from {self.service.profile.name} dropped")

        while True:
            try:
                if "log" in self._down:
                    # logs() probes the host itself, but says nothing until a line
                    # arrives; the banner should clear as soon as the host answers.
                    await self.service.transport.run(
                        ["true"], timeout=self.settings.command_timeout_s
                    )
                    self._link_back("log")
                # Backlog 0: old lines would come back as samples stamped now.
                async for line in self.service.logs(follow=True, lines=0, on_link=on_link):
                    sample = sample_from_log_line(line)
                    if sample is not None:
                        self._emit(sample)
                    delays = backoff.delays()
                    delay = next(delays)
                # The follower ended (the log command exited): start it again.
                await asyncio.sleep(delay)
            except TransportError as exc:
                self._link_lost("log", str(exc))
                await asyncio.sleep(delay)
                delay = next(delays)
            except ConsoleError as exc:
                self._emit(LiveSample(t=time.time(), source="log", note=f"log follow: {exc}"))
                await asyncio.sleep(UNAVAILABLE_RETRY)

    async def _scrape(self) -> None:
        prev: MetricsScrape | None = None
        backoff = self.settings.backoff
        delays = backoff.delays()
        unavailable = ""
        while True:
            started = time.monotonic()
            try:
                client = await self.service.client()
                cur = await client.metrics()
            except TransportError as exc:  # EngineUnreachable included
                self._link_lost("metrics", str(exc))
                prev = None  # a delta across the outage would mix in its idle time
                await asyncio.sleep(next(delays))
                continue
            except EngineRequestError as exc:
                self._link_back("metrics")
                if str(exc) != unavailable:
                    unavailable = str(exc)
                    self._emit(LiveSample(t=time.time(), source="metrics", note=unavailable))
                prev = None
                await asyncio.sleep(max(self.scrape_interval, UNAVAILABLE_RETRY))
                continue
            self._link_back("metrics")
            delays = backoff.delays()
            unavailable = ""
            if prev is not None:
                sample = sample_from_scrapes(prev, cur)
                if sample is not None:
                    self._emit(sample)
            prev = cur
            await asyncio.sleep(max(0.0, self.scrape_interval - (time.monotonic() - started)))
