"""What every engine kind provides: launch argv, flag schema, log parsers, readiness."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from console.backends.helpparse import parse_help
from console.backends.logparse import (
    LogEvent,
    parse_loading,
    parse_ready,
    parse_sglang_decode,
    parse_vllm_spec,
)
from console.backends.notes import CuratedFlag, Role, merge_notes
from console.backends.schema import FlagSchema, flags_to_argv
from console.config import FlagValue, HostProfile, LaunchProfile
from console.errors import ConsoleError
from console.transport.base import Command, Transport, describe


@dataclass
class DiscoveredSchema:
    schema: FlagSchema
    roles: dict[Role, str]  # e.g. "draft_window" -> the spelling this engine uses


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

    def help_command(self, profile: HostProfile) -> Command:
        return host_command(profile.launch, [*self.launcher(profile.launch), "--help"])

    async def discover_schema(
        self, transport: Transport, profile: HostProfile, timeout: float = 180.0
    ) -> DiscoveredSchema:
        cmd = self.help_command(profile)
        result = await transport.run(cmd, timeout=timeout)
        if not result.ok or "usage:" not in result.stdout:
            reason = result.last_line() or "no help text"
            raise ConsoleError(
                f"Cannot read the {self.kind} flag list with `{describe(cmd, 80)}` on "
                f"{transport.name} (exit {result.exit_code}: {reason}); check the profile's "
                "launch settings."
            )
        schema = parse_help(result.stdout, source=f"`--help` on {transport.name}")
        roles = merge_notes(schema, self.notes)
        return DiscoveredSchema(schema, roles)

    def parse_log(self, line: str) -> LogEvent | None:
        return (
            parse_loading(line)
            or parse_ready(line, self.ready_markers)
            or parse_sglang_decode(line)
            or parse_vllm_spec(line)
        )
