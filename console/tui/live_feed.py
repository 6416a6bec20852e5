"""Feeds the dashboard from the live series (`console.measure.live.LiveSeries`) and
from the session's measured requests.

The series follows the engine log and scrapes /metrics on its own; here its samples are
collected and handed over in batches (at most a few times a second), so a burst of log
lines costs one chart update, not one per line. `LiveFeed` keeps the samples and the
requests the dashboard shows, and the session's one `MeasureSession` and run store, so
that every measured request reaches the table and the charts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from console.analysis.gpu_sample import GpuSample
from console.analysis.records import LiveSample, RequestSample
from console.errors import ConsoleError, one_line
from console.measure.gpu import GpuRecorder, GpuTelemetry
from console.measure.session import MeasureSession
from console.sampling import Sampling
from console.service import EngineService
from console.store import RunStore

if TYPE_CHECKING:
    from console.tui.app import SpecConsoleApp

BATCH_S = 0.5
LIVE_KEEP = 2000  # live samples kept for the charts
GPU_KEEP = 2000  # GPU samples kept for the chart beside step time
REQUESTS_KEEP = 50  # requests kept for the table


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


class LiveFeed:
    """The live samples and measured requests of the session, and where they come from.

    Each change bumps the app's `live_version`, which the dashboard watches."""

    def __init__(self, app: SpecConsoleApp) -> None:
        self.app = app
        self.live_series: Any = None  # the LiveSeries feeding the dashboard, once running
        self.live_samples: list[LiveSample] = []
        self.requests: list[RequestSample] = []
        self.gpu_samples: list[GpuSample] = []
        # How the host's GPUs are read; tests put a fake here before `start()`. None:
        # nvidia-smi over the session's own transport.
        self.gpu_telemetry: GpuTelemetry | None = None
        self.gpu_reason: str | None = None  # why there is no GPU chart, once known
        self._measure: MeasureSession | None = None
        self._store: RunStore | None = None

    def start(self) -> None:
        self.app.run_worker(
            self._run_live(),
            group="live",
            exclusive=True,
            exit_on_error=False,
            description="live series",
        )
        self.app.run_worker(
            self._run_gpu(),
            group="gpu",
            exclusive=True,
            exit_on_error=False,
            description="GPU telemetry",
        )

    async def _run_gpu(self) -> None:
        """Sample the host's GPUs beside the live series; on a host without any, one
        nvidia-smi attempt and then nothing (no chart, no error)."""
        telemetry = self.gpu_telemetry
        if telemetry is None:
            telemetry = GpuTelemetry(self.app.session_service().transport)
        try:
            if not await telemetry.available():
                self.gpu_reason = telemetry.reason
                return
        except ConsoleError as exc:
            self.gpu_reason = str(exc)
            return
        recorder = GpuRecorder(telemetry, on_samples=self.ingest_gpu).start()
        try:
            await asyncio.Event().wait()  # until the worker is cancelled
        finally:
            self.gpu_reason = telemetry.reason
            await recorder.stop()

    def ingest_gpu(self, samples: Sequence[GpuSample]) -> None:
        """Add GPU samples (from the recorder or a test)."""
        if samples:
            self.gpu_samples = (self.gpu_samples + list(samples))[-GPU_KEEP:]
            self.app.live_version += 1

    async def _run_live(self) -> None:
        service = self.app.session_service()
        while True:
            try:
                await feed_live(service, self.ingest_live, self._set_live_series)
            except ImportError:
                return  # no live series in this installation: the charts stay empty
            except Exception as exc:
                self.app.log.warning(f"live series stopped: {one_line(exc)}; restarting")
            await asyncio.sleep(5.0)

    def _set_live_series(self, series: object) -> None:
        self.live_series = series
        if self._measure is not None:
            self._measure.live = series  # type: ignore[assignment]

    def ingest_live(
        self, samples: Sequence[LiveSample] = (), requests: Sequence[RequestSample] = ()
    ) -> None:
        """Add live samples and measured requests (from the live series or a test)."""
        if samples:
            self.live_samples = (self.live_samples + list(samples))[-LIVE_KEEP:]
        if requests:
            self.requests = (self.requests + list(requests))[-REQUESTS_KEEP:]
        self.app.live_version += 1

    def measure_session(self) -> MeasureSession:
        """The session's one measurement session: runs go to the history store, every
        measured request to the dashboard's table and the live series."""
        if self._measure is None:
            self._measure = MeasureSession(
                self.app.session_service(),
                store=self.run_store(),
                live=self.live_series,
                on_sample=self._measured,
                on_note=lambda text: self.app.notify(text, severity="warning"),
            )
        return self._measure

    def sampling(self) -> Sampling:
        """What this session's measurements run at (the profile's, unless changed)."""
        return self.measure_session().sampling

    def use_sampling(self, sampling: Sampling | None) -> None:
        """Measure at `sampling` from now on, in this session only (None: unchanged).
        The service's profile copy carries it too: the experiments that open their own
        measurement session (baseline, calibrate, side by side) read it from there, as
        they read a command line's `--temperature`."""
        if sampling is None or sampling == self.sampling():
            return
        service = self.app.session_service()
        service.profile = service.profile.model_copy(update={"sampling": sampling})
        self.measure_session().sampling = sampling
        self.app.notify(f"Measuring at {sampling.label} in this session; the host "
                        "profile on disk keeps its own.")  # fmt: skip

    def run_store(self) -> RunStore:
        if self._store is None:
            self._store = RunStore.default()
        return self._store

    def _measured(self, sample: RequestSample) -> None:
        # The session itself hands the sample to the live series (its `live`), which
        # brings it to the charts; here it only joins the requests table.
        self.ingest_live(requests=[sample])

    def close(self) -> None:
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.close()
