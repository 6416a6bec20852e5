"""GPU telemetry of a host, over the same transport the console uses for everything else.

It runs `nvidia-smi` in its query mode (an argv list, so no shell on our side parses
anything), which every NVIDIA driver install ships; pynvml would need a Python with it on
the host, and the console never assumes one. A host without nvidia-smi, or whose driver
does not answer, has no GPU telemetry: `available()` is False and `sample()` returns [],
with the reason kept in `reason`, never an error. A dropped link is still an error
(`TransportError`): that says nothing about the GPUs.
"""

from __future__ import annotations

from console.service.gpu_sample import QUERY_FIELDS, GpuSample, parse_query_csv
from console.transport.base import Transport

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
                self.reason = f"nvidia-smi is not installed on {self.host}"
            elif not result.ok:
                why = result.last_line() or f"exit {result.exit_code}"
                self.reason = f"nvidia-smi on {self.host} reports no GPU ({why})"
            else:
                self.reason = f"nvidia-smi on {self.host} lists no GPU"
        return []
