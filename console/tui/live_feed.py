"""Feeds the dashboard from the live series (`console.measure.live.LiveSeries`).

The series follows the engine log and scrapes /metrics on its own; here its samples are
collected and handed to the app in batches (at most a few times a second), so a burst
of log lines costs one chart update, not one per line.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from console.measure.records import LiveSample
from console.service import EngineService

BATCH_S = 0.5


async def feed_live(
    service: EngineService,
    deliver: Callable[[list[LiveSample]], None],
    on_series: Callable[[object], None] | None = None,
) -> None:
    """Run a `LiveSeries` for `service` until cancelled, delivering samples in batches."""
    from console.measure.live import LiveSeries, is_link_sample

    series = LiveSeries(service)
    if on_series is not None:
        on_series(series)
    runner = asyncio.create_task(series.run(), name="tui-live-series")
    pending: list[LiveSample] = []
    try:
        async with series.subscribe() as sub:
            while True:
                with contextlib.suppress(TimeoutError):
                    pending.append(await asyncio.wait_for(sub.__anext__(), BATCH_S))
                    pending += sub.pending()
                if runner.done():
                    runner.result()  # raise what ended it
                figures = [s for s in pending if not is_link_sample(s)]
                if figures:
                    deliver(figures)
                pending.clear()
    finally:
        runner.cancel()
        with contextlib.suppress(BaseException):
            await runner
