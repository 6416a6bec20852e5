"""The engine: the service's state (as `status` reads it), its kind and version, whether
its flag schema is known (its own parser, or only its help text) and what the launch
config speculates with.

Everything kind-specific comes from the engine's adapter (`console/backends/<kind>/`):
its speculation, the drafter its method needs; this module only words the answers.
"""

from __future__ import annotations

from console.doctor.check import Check, fail, ok, skip, warn
from console.doctor.findings import Findings
from console.errors import ConsoleError
from console.measure.session import MeasureSession

LAUNCH_FIX = "check the profile's launch settings (python, venv or command)"


async def engine_checks(found: Findings) -> list[Check]:
    return [
        await _service(found),
        await _version(found),
        await _schema(found),
        _speculation(found),
    ]


async def _service(found: Findings) -> Check:
    host = found.host
    try:
        st = await found.service.status()
    except ConsoleError as exc:
        fix = f"check the profile's supervisor settings (`specconsole hosts show {host}`)"
        return fail("service", f"its state could not be read: {str(exc).rstrip('.')}", fix)
    found.status = st
    where = f"{st.engine}, {st.supervisor} supervisor" + (f", pid {st.pid}" if st.pid else "")
    if st.state == "failed":
        why = st.root_cause or st.message or f"exit {st.exit_code}"
        fix = st.hint or (
            f"`specconsole logs {host}` shows why; change the flag that broke it, or "
            f"`specconsole rollback {host}`"
        )
        return fail("service", f"failed ({where}): {why}", fix)
    if st.state == "stopped":
        fix = f"`specconsole start {host}` starts it (the metrics and log checks need it running)"
        return warn("service", f"stopped ({where})", fix)
    if st.state != "ready":
        progress = f" {st.percent}%" if st.percent is not None else ""
        return warn("service", f"{st.state}{progress} ({where})",
                    "wait for ready, then run doctor again")  # fmt: skip
    if st.drift:
        fix = (
            "wait for that change to finish"
            if st.lease
            else f"`specconsole restart {host}` runs the launch config"
        )
        return warn("service", st.drift, fix)
    return ok("service", f"ready ({where}, port {st.port}), running its launch config")


async def _version(found: Findings) -> Check:
    kind = found.backend.kind
    version = None
    try:
        found.schema = await found.service.schema()
        version = found.schema.schema.engine_version
    except ConsoleError:
        pass  # the schema check says why
    if version is None and found.ready:
        try:
            facts = await MeasureSession(found.service).facts()
            version = f"{kind} {facts.version}" if facts.version else None
        except ConsoleError:
            version = None
    if version is not None:
        return ok("engine", version)
    return warn(
        "engine",
        f"{kind}, version unknown (not importable by the launcher's Python, and no running "
        "engine said)",
        "start the engine, or point the profile at the Python that has it installed "
        "(launch.python or launch.venv)",
    )


async def _schema(found: Findings) -> Check:
    if found.schema is None:
        try:
            found.schema = await found.service.schema()
        except ConsoleError as exc:
            return fail("flag-schema", str(exc).rstrip("."), LAUNCH_FIX)
    discovered = found.schema
    count = len(discovered.schema.flags)
    if discovered.origin == "parser":
        return ok("flag-schema", f"{count} flags from {discovered.schema.source}")
    return warn(
        "flag-schema",
        f"{count} flags read from the help text only ({discovered.fallback_reason}): "
        "flag changes are not checked by the engine's own parser",
        "make the engine importable by the profile's Python (launch.python or launch.venv)",
    )


def _speculation(found: Findings) -> Check:
    flags = found.flags
    spec = found.backend.speculation(flags)
    if spec.method is None:
        return warn(
            "speculation",
            "off in the launch config: the engine decodes without speculation",
            f"set a speculative method and its draft flags (`specconsole flags {found.host}` "
            "lists them), unless this host is the plain baseline",
        )
    problem = found.backend.draft_problem(flags)
    if problem is not None:
        return warn("speculation", problem,
                    f"set the drafter's path (`specconsole flags {found.host}`)")  # fmt: skip
    drafter = f", drafter {spec.drafter}" if spec.drafter else ""
    return ok("speculation", f"{spec.describe()}{drafter}")


def skipped(reason: str) -> list[Check]:
    """The engine's checks when the host was not reached."""
    return [skip(name, reason) for name in ("service", "engine", "flag-schema", "speculation")]
