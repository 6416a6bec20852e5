"""`doctor`: every check of one host, in the order an operator fixes things (the link,
then the engine, what the console reads from it, the host, who else uses it).

Each check family is a module of its own; this one composes them. A host that cannot be
reached gets every later check as `skip`, so the report always names the same checks.
"""

from __future__ import annotations

from collections.abc import Sequence

from console.doctor import engine, readings
from console.doctor.check import Check, DoctorReport, fail, guarded, skip
from console.doctor.findings import Findings
from console.doctor.host import clock_check, disk_check, gpu_check
from console.doctor.link import LINK_FIX, NOT_REACHED, link_checks
from console.doctor.shared import shared_checks
from console.errors import ConsoleError
from console.service import EngineService
from console.transport import HostKeyInfo

HOST_CHECKS = ("gpu", "clock", "disk")
SHARED_CHECKS = ("port", "orphan", "lease")


async def run_doctor(
    service: EngineService, *, trusted: Sequence[HostKeyInfo] = ()
) -> DoctorReport:
    """Check the host of `service`. `trusted`: the host keys the caller's confirmation
    accepted while connecting (filled as it connects), for the host-key line."""
    transport, profile = service.transport, service.profile
    timeout = service.settings.command_timeout_s
    checks, reached = await link_checks(transport, profile, trusted, timeout)
    if not reached:
        rest = [*engine.skipped(NOT_REACHED), *readings.skipped(NOT_REACHED)]
        rest += [skip(name, NOT_REACHED) for name in (*HOST_CHECKS, *SHARED_CHECKS)]
        return DoctorReport(profile.name, tuple(checks + rest))
    found = Findings(service)
    checks += await engine.engine_checks(found)
    checks += await readings.reading_checks(found)
    checks += [
        await guarded("gpu", gpu_check(transport), LINK_FIX),
        await guarded("clock", clock_check(transport, timeout), LINK_FIX),
        await guarded("disk", _disk(service, timeout), LINK_FIX),
    ]
    checks += await _shared(found)
    return DoctorReport(profile.name, tuple(checks))


async def _disk(service: EngineService, timeout: float) -> Check:
    return await disk_check(service.transport, (await service.files()).dir, timeout)


async def _shared(found: Findings) -> list[Check]:
    try:
        return await shared_checks(found)
    except ConsoleError as exc:
        detail = f"could not be checked: {str(exc).rstrip('.')}"
        return [fail(name, detail, LINK_FIX) for name in SHARED_CHECKS]
