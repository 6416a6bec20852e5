"""What every engine kind provides: launch argv, flag schema, log parsers, readiness.

The flag schema comes from the engine's own argparse parser, built on the host by the
engine's interpreter (`introspect.py`), and is cached per host, engine kind, interpreter
and engine fingerprint (`schema_cache.py`). When the parser cannot be built (the launcher
is not Python, the engine's imports fail) the help text is parsed instead, and the schema
says so in its `source`. The same parser checks a candidate command line before any
restart (`check_flags`).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Literal

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
from console.backends.logparse import (
    LogEvent,
    parse_loading,
    parse_ready,
    parse_sglang_decode,
    parse_sglang_prefill,
    parse_vllm_spec,
    parse_vllm_throughput,
)
from console.backends.notes import CuratedFlag, Role, merge_notes
from console.backends.schema import FlagSchema, flags_to_argv
from console.config import FlagValue, HostProfile, LaunchProfile
from console.errors import ConsoleError
from console.transport.base import Command, Transport, describe

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


class Backend:
    kind: str = ""
    #: `python -m <module...>` when the profile gives only an interpreter
    module: tuple[str, ...] = ()
    ready_markers: tuple[str, ...] = ()
    notes: tuple[CuratedFlag, ...] = ()
    model_flag = "model-path"
    draft_flag: str | None = "speculative-draft-model-path"

    def launcher(self, launch: LaunchProfile) -> list[str]:
        if launch.command:
            cmd = launch.command
            return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        if launch.venv:
            python = os.path.join(launch.venv, "bin", "python")
        else:
            python = launch.python or "python3"
        return [python, *self.module]

    def initial_flags(self, profile: HostProfile) -> dict[str, FlagValue]:
        """The flags a service starts with before anyone ran `set`: profile + paths + port."""
        flags: dict[str, FlagValue] = {}
        if profile.model_path:
            flags[self.model_flag] = profile.model_path
        if profile.draft_model_path and self.draft_flag:
            flags[self.draft_flag] = profile.draft_model_path
        flags.update(profile.flags)
        flags.setdefault("port", profile.port)
        return flags

    def launch_argv(
        self, profile: HostProfile, flags: dict[str, FlagValue], schema: FlagSchema | None = None
    ) -> list[str]:
        return [*self.launcher(profile.launch), *flags_to_argv(flags, schema)]

    #: help invocations to try, in order, when the parser cannot be built
    help_args: tuple[str, ...] = ("--help",)

    def help_command(self, profile: HostProfile, arg: str = "--help") -> Command:
        return host_command(profile.launch, [*self.launcher(profile.launch), arg])

    async def interpreter(self, transport: Transport, profile: HostProfile) -> list[str] | None:
        """The Python interpreter that runs this engine on the host, if it is Python."""
        launcher = self.launcher(profile.launch)
        found = interpreter_argv(profile.launch, launcher)
        if found is None and launcher:
            found = await resolve_script_interpreter(transport, launcher[0])
        return found

    async def discover_schema(
        self, transport: Transport, profile: HostProfile, timeout: float = PROBE_TIMEOUT
    ) -> DiscoveredSchema:
        """The engine's flags from its own parser (cached), else from its help text."""
        reason = "the launcher is not a Python interpreter"
        python = await self.interpreter(transport, profile)
        fingerprint: dict | None = None
        if python is not None:
            command = host_command(profile.launch, probe_command(python))
            try:
                reply = await run_probe(
                    transport,
                    command,
                    {"op": "fingerprint", "kind": self.kind},
                    FINGERPRINT_TIMEOUT,
                )
                fingerprint = reply.get("fingerprint")
                if not isinstance(fingerprint, dict) or not fingerprint.get("installed"):
                    reason = f"{self.kind} is not importable by {python[0]}"
                    fingerprint = None
            except ProbeFailed as exc:
                reason = f"{python[0]} could not run the probe ({exc})"
        if python is not None and fingerprint is not None:
            cached = schema_cache.load(transport.name, self.kind, python, fingerprint)
            dump = cached.get("dump") if cached else None
            if dump is None:
                try:
                    dump = await run_probe(
                        transport, command, {"op": "dump", "kind": self.kind}, timeout
                    )
                    schema_cache.save(
                        transport.name, self.kind, python, fingerprint, {"dump": dump}
                    )
                except ProbeFailed as exc:
                    reason = f"its parser could not be built ({exc})"
            if dump is not None:
                version = fingerprint.get("engine_version") or "unknown version"
                source = (
                    f"{self.kind} {version}'s own argparse parser ({dump.get('parser')}, run by "
                    f"{python[0]} on {transport.name})"
                )
                schema = schema_from_dump(dump, source)
                schema.source_kind = "parser"
                schema.engine_version = f"{self.kind} {version}"
                roles = merge_notes(schema, self.notes)
                return DiscoveredSchema(schema, roles, "parser", python, cached=cached is not None)
        schema = await self._schema_from_help(transport, profile, timeout, reason)
        roles = merge_notes(schema, self.notes)
        return DiscoveredSchema(schema, roles, "help", None, fallback_reason=reason)

    async def _schema_from_help(
        self, transport: Transport, profile: HostProfile, timeout: float, reason: str
    ) -> FlagSchema:
        why, cmd, exit_code = "no help invocation", None, None
        for arg in self.help_args:
            cmd = self.help_command(profile, arg)
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
            f"Cannot read the {self.kind} flag list with `{shown}` on {transport.name} "
            f"(exit {exit_code}: {why}); check the profile's launch settings."
        )

    async def check_flags(
        self,
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
                transport, command, {"op": "check", "kind": self.kind, "argv": argv}, timeout
            )
        except ProbeFailed:
            return None
        return check_from_reply(reply)

    def parse_log(self, line: str) -> LogEvent | None:
        return (
            parse_loading(line)
            or parse_ready(line, self.ready_markers)
            or parse_sglang_decode(line)
            or parse_sglang_prefill(line)
            or parse_vllm_spec(line)
            or parse_vllm_throughput(line)
        )
