"""An engine's flag schema, for its adapter: from its own parser on the host, else its help.

The flag schema comes from the engine's own argparse parser, built on the host by the
engine's interpreter (`introspect.py`), and is cached per host, engine kind, interpreter
and engine fingerprint (`schema_cache.py`). When the parser cannot be built (the launcher
is not Python, the engine's imports fail) the help text is parsed instead, and the schema
says so in its `source`. The same parser checks a candidate command line before any
restart (`check_flags`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from console.backends import schema_cache
from console.backends.helpparse import parse_help
from console.backends.introspect import (
    CheckResult,
    ProbeFailed,
    check_from_reply,
    interpreter_argv,
    probe_command,
    resolve_script_interpreter,
    run_probe,
    schema_from_dump,
)
from console.backends.notes import Role, merge_notes
from console.backends.schema import FlagSchema, flags_to_argv
from console.config import FlagValue, HostProfile, LaunchProfile
from console.errors import ConsoleError
from console.transport.base import Command, Transport, describe

if TYPE_CHECKING:
    from console.backends.adapter import EngineAdapter

PROBE_TIMEOUT = 180.0
FINGERPRINT_TIMEOUT = 60.0


@dataclass
class DiscoveredSchema:
    schema: FlagSchema
    roles: dict[Role, str]  # e.g. "draft_window" -> the spelling this engine uses
    origin: Literal["parser", "help", ""] = ""
    interpreter: list[str] | None = None  # runs the engine's parser for checks
    fallback_reason: str = ""  # why the parser was not used, when it was not
    cached: bool = False
    notices: list[str] = field(default_factory=list)


def host_command(launch: LaunchProfile, argv: list[str]) -> Command:
    """argv with the profile's environment and working directory, as one quoted script."""
    parts = []
    if launch.workdir:
        parts.append(f"cd {shlex.quote(launch.workdir)} &&")
    parts.append("exec")
    if launch.env:
        parts += ["env", *(shlex.quote(f"{k}={v}") for k, v in launch.env.items())]
    parts += [shlex.quote(a) for a in argv]
    return " ".join(parts)


async def engine_interpreter(
    adapter: EngineAdapter, transport: Transport, profile: HostProfile
) -> list[str] | None:
    """The Python interpreter that runs this engine on the host, if it is Python."""
    launcher = adapter.launcher(profile.launch)
    found = interpreter_argv(profile.launch, launcher)
    if found is None and launcher:
        found = await resolve_script_interpreter(transport, launcher[0])
    return found


async def discover_schema(
    adapter: EngineAdapter,
    transport: Transport,
    profile: HostProfile,
    timeout: float = PROBE_TIMEOUT,
) -> DiscoveredSchema:
    """The engine's flags from its own parser (cached), else from its help text."""
    kind = adapter.kind
    reason = "the launcher is not a Python interpreter"
    python = await adapter.interpreter(transport, profile)
    fingerprint: dict | None = None
    if python is not None:
        command = host_command(profile.launch, probe_command(python))
        try:
            reply = await run_probe(
                transport, command, adapter.probe_request("fingerprint"), FINGERPRINT_TIMEOUT
            )
            fingerprint = reply.get("fingerprint")
            if not isinstance(fingerprint, dict) or not fingerprint.get("installed"):
                reason = f"{kind} is not importable by {python[0]}"
                fingerprint = None
        except ProbeFailed as exc:
            reason = f"{python[0]} could not run the probe ({exc})"
    if python is not None and fingerprint is not None:
        cached = schema_cache.load(transport.name, kind, python, fingerprint)
        dump = cached.get("dump") if cached else None
        if dump is None:
            try:
                dump = await run_probe(transport, command, adapter.probe_request("dump"), timeout)
                schema_cache.save(transport.name, kind, python, fingerprint, {"dump": dump})
            except ProbeFailed as exc:
                reason = f"its parser could not be built ({exc})"
        if dump is not None:
            version = fingerprint.get("engine_version") or "unknown version"
            source = (
                f"{kind} {version}'s own argparse parser ({dump.get('parser')}, run by "
                f"{python[0]} on {transport.name})"
            )
            schema = schema_from_dump(dump, source)
            schema.source_kind = "parser"
            schema.engine_version = f"{kind} {version}"
            roles = merge_notes(schema, adapter.notes)
            return DiscoveredSchema(schema, roles, "parser", python, cached=cached is not None)
    schema = await _schema_from_help(adapter, transport, profile, timeout, reason)
    roles = merge_notes(schema, adapter.notes)
    return DiscoveredSchema(schema, roles, "help", None, fallback_reason=reason)


async def _schema_from_help(
    adapter: EngineAdapter, transport: Transport, profile: HostProfile, timeout: float, reason: str
) -> FlagSchema:
    why, cmd, exit_code = "no help invocation", None, None
    for arg in adapter.help_args:
        cmd = adapter.help_command(profile, arg)
        result = await transport.run(cmd, timeout=timeout)
        why, exit_code = result.last_line() or "no flags in the help text", result.exit_code
        if result.ok and "usage:" in result.stdout:
            schema = parse_help(
                result.stdout,
                source=f"`{arg}` on {transport.name} (help text, because {reason})",
            )
            if schema.flags:
                return schema
    shown = describe(cmd, 80) if cmd is not None else "--help"
    raise ConsoleError(
        f"Cannot read the {adapter.kind} flag list with `{shown}` on {transport.name} "
        f"(exit {exit_code}: {why}); check the profile's launch settings."
    )


async def check_flags(
    adapter: EngineAdapter,
    transport: Transport,
    profile: HostProfile,
    discovered: DiscoveredSchema,
    flags: dict[str, FlagValue],
    timeout: float = PROBE_TIMEOUT,
) -> CheckResult | None:
    """Run `flags` through the engine's own `parse_args` on the host (a dry run: the
    engine is imported, never started). None when no parser is available."""
    if discovered.interpreter is None:
        return None
    argv = flags_to_argv(flags, discovered.schema)
    command = host_command(profile.launch, probe_command(discovered.interpreter))
    try:
        reply = await run_probe(
            transport, command, adapter.probe_request("check", argv=argv), timeout
        )
    except ProbeFailed:
        return None
    return check_from_reply(reply)
