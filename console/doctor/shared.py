"""A host shared with others: who else listens on the service's port (read from /proc
as `start` and `status` read it), an engine of ours left outside the pid file, and a
writer's lease whose holder is gone."""

from __future__ import annotations

from console.doctor.check import Check, fail, ok, warn
from console.doctor.findings import Findings
from console.service.engine_checks import foreign_fix
from console.service.lease import Lease
from console.service.port_owner import PortOwners


async def shared_checks(found: Findings) -> list[Check]:
    service = found.service
    port = (found.status.port if found.status else None) or service.profile.port
    owners = await (await service.checks()).owners(port, found.our_pid)
    return [_port(found.host, owners), _orphan(found.host, owners), await _lease(found)]


def _port(host: str, owners: PortOwners) -> Check:
    if owners.foreign:
        return fail("port", owners.foreign_text(host), foreign_fix(host))
    if owners.ours:
        pids = ", ".join(f"pid {item.pid}" for item in owners.ours)
        under = (
            "" if pids == f"pid {owners.our_pid}" else f", under the service's pid {owners.our_pid}"
        )
        return ok("port", f"port {owners.port} is held by our engine ({pids}{under})")
    if owners.orphans:
        return ok("port", f"port {owners.port} is held by an engine of ours (see orphan)")
    return ok("port", f"port {owners.port} is free")


def _orphan(host: str, owners: PortOwners) -> Check:
    if owners.orphans:
        return warn("orphan", owners.orphan_text(host), f"`specconsole stop {host}` ends it")
    return ok("orphan", "no engine of ours outside the pid file")


async def _lease(found: Findings) -> Check:
    service = found.service
    lease = Lease(
        service.transport, await service.files(), timeout=service.settings.command_timeout_s
    )
    holder = await lease.current_holder()
    if holder is None:
        return ok("lease", "free: no change in progress")
    gone = await lease.holder_gone(holder)
    if gone is False:
        fix = "wait for it to finish; a change waits for the lease (--wait-lock)"
        return warn("lease", f"held by {holder.describe()}: a change is in progress", fix)
    pid = f" (pid {holder.pid})" if holder.pid is not None else ""
    state = "is gone" if gone else "cannot be found"
    return warn(
        "lease",
        f"stale: {lease.holder_path} names {holder.describe()}, whose holder{pid} {state}",
        f"nothing needs doing (the next change takes the lease over); removing "
        f"{lease.holder_path} clears this note",
    )
