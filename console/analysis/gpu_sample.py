"""One GPU's telemetry at one moment, and the parser of `nvidia-smi`'s query output.

Kept apart from the code that runs `nvidia-smi` (console.measure.gpu) so the
run store and the CLI can read stored samples without a host, and the parser can be
checked on the real CSV without a GPU.

`nvidia-smi --query-gpu=... --format=csv,noheader,nounits` prints one line per GPU, the
fields in the order asked, separated by ", ". A field the GPU or driver cannot report is
"[N/A]" (or "[Not Supported]", "[Unknown Error]" on some boards); that field is None
here, never 0, since a 0 W power draw or 0 % utilisation would read as a real figure.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

# The fields asked for, in this order; the parser relies on it.
QUERY_FIELDS = (
    "index",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "power.draw",
    "clocks.sm",
    "clocks.mem",
)


@dataclass(frozen=True)
class GpuSample:
    """One GPU at one moment. Units are nvidia-smi's with `nounits`: %, MiB, W, MHz."""

    index: int
    utilization_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    t: float = field(default_factory=time.time)

    @property
    def memory_pct(self) -> float | None:
        if self.memory_used_mib is None or not self.memory_total_mib:
            return None
        return 100.0 * self.memory_used_mib / self.memory_total_mib

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuSample:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def _value(text: str) -> float | None:
    text = text.strip()
    if not text or text.startswith("["):  # [N/A], [Not Supported], [Unknown Error]
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_query_csv(text: str, t: float | None = None) -> list[GpuSample]:
    """The GPUs in `nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits`
    output; lines that are not such a row (a warning, a blank) are skipped."""
    when = time.time() if t is None else t
    samples: list[GpuSample] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(QUERY_FIELDS) or not cells[0].isdigit():
            continue
        util, used, total, power, sm, mem = (_value(c) for c in cells[1:])
        samples.append(
            GpuSample(
                index=int(cells[0]),
                utilization_pct=util,
                memory_used_mib=used,
                memory_total_mib=total,
                power_w=power,
                sm_clock_mhz=sm,
                mem_clock_mhz=mem,
                t=when,
            )
        )
    return samples
