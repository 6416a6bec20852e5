"""GPU samples taken beside a run, so its step times can be read against utilisation,
memory, power and clocks of the same minutes (a step time that doubles while the SM clock
halves is a throttling GPU, not a longer context).

The recorder polls in a task of its own for as long as the run lasts. It never fails the
run: a host without GPUs records nothing (one nvidia-smi attempt, then quiet), and a tick
lost to a dropped link is skipped (the measurement itself reports the link).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from console.errors import ConsoleError
from console.service.gpu_sample import GpuSample
from console.service.gpu_telemetry import GpuTelemetry

if TYPE_CHECKING:
    from console.store import RunStore
    from console.transport.base import Transport

GPU_INTERVAL_S = 2.0  # a decode step is ms, a sweep point seconds: 2 s shows the trend


class GpuRecorder:
    """Samples a host's GPUs every `interval` s into `samples` (and the run store)."""

    def __init__(
        self,
        telemetry: GpuTelemetry,
        *,
        store: RunStore | None = None,
        run_id: int | None = None,
        interval: float = GPU_INTERVAL_S,
        on_samples: Callable[[list[GpuSample]], None] | None = None,
    ) -> None:
        self.telemetry = telemetry
        self.store = store
        self.run_id = run_id
        self.interval = interval
        self.on_samples = on_samples
        self.samples: list[GpuSample] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> GpuRecorder:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="gpu-recorder")
        return self

    async def stop(self) -> None:
        """Stop sampling (a tick in flight is dropped)."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConsoleError):
            await task

    async def _tick(self) -> None:
        try:
            samples = await self.telemetry.sample()
        except ConsoleError:
            return  # a lost link or a slow nvidia-smi: skip this moment
        if not samples:
            return
        self.samples.extend(samples)
        if self.store is not None and self.run_id is not None:
            await self.store.add_gpu(self.run_id, samples)
        if self.on_samples is not None:
            self.on_samples(samples)

    async def _loop(self) -> None:
        try:
            if not await self.telemetry.available():
                return
        except ConsoleError:
            return
        while True:
            await self._tick()
            await asyncio.sleep(self.interval)


def record_gpus(
    transport: Transport,
    store: RunStore | None,
    run_id: int | None,
    *,
    interval: float = GPU_INTERVAL_S,
) -> GpuRecorder:
    """Start recording a host's GPUs for a run; `await recorder.stop()` when it ends."""
    return GpuRecorder(
        GpuTelemetry(transport), store=store, run_id=run_id, interval=interval
    ).start()
