"""GPU telemetry of a host, over the same transport the console uses for everything else,
and the recorder that samples it beside a run.

`GpuTelemetry` runs `nvidia-smi` in its query mode (an argv list, so no shell on our side parses
anything), which every NVIDIA driver install ships; pynvml would need a Python with it on
the host, and the console never assumes one. A host without nvidia-smi, or whose driver
does not answer, has no GPU telemetry: `available()` is False and `sample()` returns [],
with the reason kept in `reason`, never an error. A dropped link is still an error
(`TransportError`): that says nothing about the GPUs.

`GpuRecorder` takes samples beside a run, so its step times can be read against utilisation,
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

from console.analysis.gpu_sample import QUERY_FIELDS, GpuSample, parse_query_csv
from console.errors import ConsoleError
from console.transport.base import Transport

if TYPE_CHECKING:
    from console.store import RunStore

NVIDIA_SMI = "nvidia-smi"
QUERY_ARGV = (
    NVIDIA_SMI,
    "--query-gpu=" + ",".join(QUERY_FIELDS),
    "--format=csv,noheader,nounits",
)
QUERY_TIMEOUT_S = 15.0  # nvidia-smi can take seconds on a busy multi-GPU box
NOT_FOUND = 127  # the shell's (and LocalTransport's) exit code for a missing command


class GpuTelemetry:
    """`available()` once, then `sample()` as often as wanted (one nvidia-smi run each)."""

    def __init__(self, transport: Transport, *, timeout: float = QUERY_TIMEOUT_S) -> None:
        self.transport = transport
        self.timeout = timeout
        self.reason: str | None = None  # why there is no telemetry, once known
        self.missing = False  # no nvidia-smi at all (a CPU host), not a driver that fails
        self._available: bool | None = None

    @property
    def host(self) -> str:
        return self.transport.name

    async def available(self) -> bool:
        """Whether this host reports GPU telemetry; asked once, then remembered."""
        if self._available is None:
            await self._query()
        return bool(self._available)

    async def sample(self) -> list[GpuSample]:
        """Every GPU's figures now; [] on a host without GPU telemetry."""
        if self._available is False:
            return []
        return await self._query()

    async def _query(self) -> list[GpuSample]:
        result = await self.transport.run(list(QUERY_ARGV), timeout=self.timeout)
        samples = parse_query_csv(result.stdout) if result.ok else []
        if samples:
            self._available, self.reason = True, None
            return samples
        if self._available is None:  # first answer: decide, and say why not
            self._available = False
            if result.exit_code == NOT_FOUND:
                self.missing = True
                self.reason = f"nvidia-smi is not installed on {self.host}"
            elif not result.ok:
                why = result.last_line() or f"exit {result.exit_code}"
                self.reason = f"nvidia-smi on {self.host} reports no GPU ({why})"
            else:
                self.reason = f"nvidia-smi on {self.host} lists no GPU"
        return []


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
        self._keeping: asyncio.Task[None] | None = None  # a tick's samples being stored

    def start(self) -> GpuRecorder:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="gpu-recorder")
        return self

    async def stop(self) -> None:
        """Stop sampling: a reading still in flight is dropped, one already read is kept
        in `samples` and the store alike (they never disagree)."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConsoleError):
            await task
        if self._keeping is not None:
            await self._keeping

    async def _tick(self) -> None:
        try:
            samples = await self.telemetry.sample()
        except ConsoleError:
            return  # a lost link or a slow nvidia-smi: skip this moment
        if not samples:
            return
        # kept by a task of its own, shielded: cancelling the loop mid-write would leave
        # samples in memory that the run store lacks
        self._keeping = asyncio.create_task(self._keep(samples))
        await asyncio.shield(self._keeping)

    async def _keep(self, samples: list[GpuSample]) -> None:
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
