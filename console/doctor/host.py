"""The host itself: GPU telemetry (nvidia-smi, as the dashboard and `gpu` read it), its
clock against this machine's (logs and live samples are lined up by time) and the free
space where the service keeps its log."""

from __future__ import annotations

import shlex
import time

from console.doctor.check import Check, fail, ok, skip, warn
from console.measure.gpu import GpuTelemetry
from console.transport import Transport, check

SKEW_WARN_S = 2.0
DISK_WARN_BYTES = 1 << 30  # 1 GiB: a day of a chatty engine's log
DISK_FAIL_BYTES = 64 << 20  # the log and the launch config's writes fail soon


async def gpu_check(transport: Transport) -> Check:
    telemetry = GpuTelemetry(transport)
    if await telemetry.available():
        samples = await telemetry.sample()
        return ok("gpu", f"nvidia-smi reports {len(samples)} GPU(s)")
    reason = telemetry.reason or "no GPU telemetry"
    if telemetry.missing:
        return skip("gpu", f"{reason}: a CPU host, no GPU charts")
    return warn("gpu", reason,
                "check the NVIDIA driver: `nvidia-smi` on the host must list its GPUs")  # fmt: skip


async def clock_check(transport: Transport, timeout: float, limit: float = SKEW_WARN_S) -> Check:
    """The host's `date` against this machine's clock at the middle of the round trip."""
    before = time.time()
    result = await check(transport, "date +%s.%N", "Reading the host's clock", timeout=timeout)
    after = time.time()
    text = result.stdout.strip().removesuffix(".N")  # a `date` without %N: whole seconds
    try:
        remote = float(text)
    except ValueError:
        return warn("clock", f"the host's `date +%s` printed {text[:40]!r}",
                    "install GNU coreutils' date on the host")  # fmt: skip
    skew = remote - (before + after) / 2
    trip = f"round trip {1000 * (after - before):.0f} ms"
    if abs(skew) - (after - before) / 2 > limit:
        return warn(
            "clock",
            f"the host's clock is {skew:+.1f} s off this machine's ({trip})",
            "sync the clocks (chrony or systemd-timesyncd on both): log lines and live "
            "samples are lined up by time",
        )
    return ok("clock", f"{skew:+.3f} s from this machine's ({trip})")


_DF = """
d=$1
while [ ! -d "$d" ] && [ "$d" != / ]; do d=$(dirname "$d"); done
df -Pk "$d" | tail -n 1
"""


async def disk_check(
    transport: Transport,
    path: str,
    timeout: float,
    *,
    warn_below: int = DISK_WARN_BYTES,
    fail_below: int = DISK_FAIL_BYTES,
) -> Check:
    """Free space on the file system that holds `path` (or will: its nearest parent)."""
    script = f"set -- {shlex.quote(path)}\n{_DF}"
    result = await check(transport, script, "Reading the free disk space", timeout=timeout)
    fields = result.stdout.split()
    if len(fields) < 6 or not fields[3].isdigit():
        return warn("disk", f"`df -Pk` printed {result.stdout.strip()[:60]!r}",
                    "check that `df` works on the host")  # fmt: skip
    free = int(fields[3]) * 1024
    where = f"{_size(free)} free on {fields[5]} (holds {path})"
    fix = (
        "free space there, or point the profile's state_dir at a larger file system: the "
        "engine's log grows there"
    )
    if free < fail_below:
        return fail("disk", where, fix)
    if free < warn_below:
        return warn("disk", f"{where}, under {_size(warn_below)}", fix)
    return ok("disk", where)


def _size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1024:.0f} KiB"
