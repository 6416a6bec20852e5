"""The one contract every engine kind implements: `EngineAdapter`.

An adapter says everything the console must know about one kind of engine, so nothing
above `backends/` asks which kind it is talking to:

- launch: the module or command that starts it, the log lines that mean "ready", the
  flags a new service starts with, and a sentence for a launch failure it recognises;
- flags: where its argparse parser lives in each release (`parser_modules`, sent to the
  host's probe), what identifies the install, and the help text to fall back on;
- logs and `/metrics`: its log events, and live samples from a log line or two scrapes;
- requests: the body it is sent and what its response says (`RequestFigures`);
- speculation: whether flags speculate, the changes that switch it off, and what
  `status` shows (method, draft tokens);
- capabilities the experiments need (per-round timing, a tree-budget flag).

One package per kind (`builtin/`, `sglang/`, `vllm/`) holds its adapter and what only it
needs; `get_adapter(kind)` in `console/backends/__init__.py` picks one.
"""

from __future__ import annotations

import os
import shlex
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from console.analysis.records import LiveSample
from console.backends import schema_discovery
from console.backends.advice import FlagAdvice
from console.backends.failure import exception_after, root_cause
from console.backends.introspect import CheckResult
from console.backends.logparse import LogEvent, parse_loading, parse_ready
from console.backends.notes import CuratedFlag
from console.backends.request import RequestFigures, RequestSpec
from console.backends.schema import FlagSchema, flags_to_argv
from console.backends.schema_discovery import DiscoveredSchema, host_command
from console.backends.wire import MetricsScrape, TimedResponse
from console.config import FlagValue, HostProfile, LaunchProfile
from console.transport.base import Command, Transport

LogParser = Any  # Callable[[str], LogEvent | None]


@dataclass(frozen=True)
class Speculation:
    """What a launch config speculates with, as `status` shows it."""

    method: str | None  # None: speculation is off
    draft_tokens: int | None = None  # tokens drafted per round, when the flags say
    drafter: str | None = None

    def describe(self) -> str:
        if self.method is None:
            return "off"
        text = self.method
        if self.draft_tokens is not None:
            text += f", {self.draft_tokens} draft tokens"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "draft_tokens": self.draft_tokens, "drafter": self.drafter}


LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


@dataclass(frozen=True)
class Bind:
    """The address an engine listens on, as its flags (or its default) say."""

    address: str
    from_flag: bool  # False: the engine's own default

    @property
    def wide(self) -> bool:
        return self.address not in LOOPBACK_NAMES and not self.address.startswith("127.")

    def warning(self) -> str | None:
        if not self.wide:
            return None
        where = "every interface" if self.address in ("", "0.0.0.0", "::") else self.address
        return (
            f"the engine binds {self.address or '*'} ({where}): anyone on the network can "
            f"reach it; set host={LOOPBACK} to keep it on loopback"
        )


class EngineAdapter(ABC):
    kind: ClassVar[str] = ""

    # -- launch -------------------------------------------------------------------------
    #: `python -m <module...>` when the profile gives only an interpreter
    module: tuple[str, ...] = ()
    ready_markers: tuple[str, ...] = ()
    notes: tuple[CuratedFlag, ...] = ()
    model_flag = "model-path"
    draft_flag: str | None = "speculative-draft-model-path"
    #: the flag that sets the listen address, and what the engine binds without it
    bind_flag = "host"
    default_bind = ""
    #: new services get `--host 127.0.0.1` unless the profile sets a host (the console
    #: reaches the engine through its transport, so nothing else needs to)
    pin_loopback = True

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
        if self.pin_loopback and self.bind_flag:
            flags.setdefault(self.bind_flag, LOOPBACK)
        return flags

    def bind(self, flags: dict[str, FlagValue]) -> Bind:
        value = flags.get(self.bind_flag) if self.bind_flag else None
        if value in (None, ""):
            return Bind(self.default_bind, from_flag=False)
        return Bind(str(value), from_flag=True)

    def launch_argv(
        self, profile: HostProfile, flags: dict[str, FlagValue], schema: FlagSchema | None = None
    ) -> list[str]:
        return [*self.launcher(profile.launch), *flags_to_argv(flags, schema)]

    def launch_problem(self, log_tail: Sequence[str]) -> str | None:
        """One sentence for a start failure this engine is known for, or None."""
        return None

    def diagnose_failure(self, lines: Sequence[str]) -> tuple[str, str]:
        """(root-cause line, hint) of a failed start from its log lines, oldest first."""
        first = root_cause(lines)
        detail = exception_after(lines, first) if first else ""
        cause = f"{first} -> {detail}" if detail and detail not in first else first
        return cause, self.launch_problem(lines) or ""

    # -- flag schema --------------------------------------------------------------------
    #: what identifies the install: distributions (any), top-level package, flags source
    dists: tuple[str, ...] = ()
    package: str = ""
    flags_source: str = ""
    #: per parser part, the `module:attr` spellings of each release, newest first
    parser_modules: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: JSON-object flags checked against the config class the engine builds from them:
    #: {"dest", "flag", "class": [module:attr, ...], "literal_fields": [...]}
    config_checks: ClassVar[tuple[dict[str, Any], ...]] = ()
    #: help invocations to try, in order, when the parser cannot be built
    help_args: tuple[str, ...] = ("--help",)

    def probe_request(self, op: str, **extra: Any) -> dict[str, Any]:
        """A request for the host's probe (`hostprobe.py`): what to build, from where."""
        engine = {
            "dists": list(self.dists),
            "package": self.package,
            "source": self.flags_source,
            "modules": {k: list(v) for k, v in self.parser_modules.items()},
            "config_checks": list(self.config_checks),
        }
        return {"op": op, "kind": self.kind, "engine": engine, **extra}

    def help_command(self, profile: HostProfile, arg: str = "--help") -> Command:
        return host_command(profile.launch, [*self.launcher(profile.launch), arg])

    async def interpreter(self, transport: Transport, profile: HostProfile) -> list[str] | None:
        """The Python interpreter that runs this engine on the host, if it is Python."""
        return await schema_discovery.engine_interpreter(self, transport, profile)

    async def discover_schema(
        self,
        transport: Transport,
        profile: HostProfile,
        timeout: float = schema_discovery.PROBE_TIMEOUT,
    ) -> DiscoveredSchema:
        """The engine's flags from its own parser (cached), else from its help text."""
        return await schema_discovery.discover_schema(self, transport, profile, timeout)

    async def check_flags(
        self,
        transport: Transport,
        profile: HostProfile,
        discovered: DiscoveredSchema,
        flags: dict[str, FlagValue],
        timeout: float = schema_discovery.PROBE_TIMEOUT,
    ) -> CheckResult | None:
        """Run `flags` through the engine's own `parse_args` on the host (a dry run: the
        engine is imported, never started). None when no parser is available."""
        return await schema_discovery.check_flags(
            self, transport, profile, discovered, flags, timeout
        )

    # -- logs and /metrics --------------------------------------------------------------
    #: this engine's own log-line parsers (loading bars and ready markers are shared)
    log_parsers: ClassVar[tuple[LogParser, ...]] = ()

    def parse_log(self, line: str) -> LogEvent | None:
        event = parse_loading(line) or parse_ready(line, self.ready_markers)
        for parser in self.log_parsers:
            if event is not None:
                break
            event = parser(line)
        return event

    @abstractmethod
    def live_from_log(self, line: str, when: float) -> LiveSample | None:
        """A live sample from one of this engine's log lines; None for every other line."""

    @abstractmethod
    def owns_scrape(self, scrape: MetricsScrape) -> bool:
        """Whether a `/metrics` page is this engine's exposition (by the series it has)."""

    @abstractmethod
    def live_from_scrapes(self, prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
        """The sample for the interval between two scrapes, or None when it did not decode."""

    # -- requests -----------------------------------------------------------------------
    request_endpoint: str = ""
    #: scrape /metrics around each measured request (the counters' deltas are its figures)
    scrapes_around_requests = False
    #: the engine answers `GET /version` (when `/get_server_info` has no version)
    version_path: str | None = None

    @abstractmethod
    def request_body(self, spec: RequestSpec, model: str) -> dict[str, Any]:
        """The body of one measured request (at `spec.sampling` and its seed, exact token
        count)."""

    @abstractmethod
    def response_figures(
        self,
        response: TimedResponse,
        before: MetricsScrape | None = None,
        after: MetricsScrape | None = None,
    ) -> RequestFigures:
        """What the response (and the scrapes around it) say about the request."""

    def counters_caught_up(
        self, before: MetricsScrape | None, after: MetricsScrape | None, completion_tokens: int
    ) -> bool:
        """Whether the scrape after a request already counts all of it: an engine that
        records its counters after the reply leaves, at times, needs another scrape."""
        return True

    def verify_steps_between(
        self, before: MetricsScrape | None, after: MetricsScrape | None
    ) -> float | None:
        """Verify steps the engine's counters counted between two scrapes, for requests
        sent together (`specconsole load`) where the reply does not carry them; None
        where the counters have none (the reply does: ours, SGLang)."""
        return None

    def decode_seconds_between(
        self, before: MetricsScrape | None, after: MetricsScrape | None
    ) -> float | None:
        """Decode time the engine's counters summed over the requests that ended between
        two scrapes (`specconsole load`'s waves); None where the replies carry their own
        (ours, SGLang) or the counters have none."""
        return None

    @abstractmethod
    def stream_tokens(self, data: dict[str, Any], seen: int) -> int:
        """Tokens generated so far after one streamed event (`seen` before it)."""

    # -- speculation --------------------------------------------------------------------
    #: the engine reports each round's context and step time (`bench fidelity`)
    reports_round_stats = False
    #: the flag that sets a DDTree's node budget, where the engine has one
    tree_budget_flag: str | None = None
    #: the flag that slows every round by a share of its own compute (a fault of known
    #: relative size), if any
    round_slowdown_flag: str | None = None
    #: a second engine process with other flags fits beside the first on one host (a
    #: small model), so two configurations can be compared side by side
    fits_side_by_side = False
    #: output parsers to switch on, flag -> value: a change that cannot move decode speed
    parser_flags: ClassVar[dict[str, str]] = {}

    @abstractmethod
    def speculation(self, flags: dict[str, FlagValue]) -> Speculation:
        """What these flags speculate with (method None: speculation off)."""

    def speculating(self, flags: dict[str, FlagValue]) -> bool:
        return self.speculation(flags).method is not None

    @abstractmethod
    def speculation_off(self, flags: dict[str, FlagValue]) -> dict[str, str | None]:
        """The flag changes (`None` unsets) that turn speculation off with these flags."""

    # -- doctor -------------------------------------------------------------------------
    #: speculative methods that draft with a model of their own, and where it is named
    drafter_methods: frozenset[str] = frozenset()
    drafter_where: str = ""
    #: the spec-decode counters its /metrics page carries while speculation runs; what
    #: their absence costs, and what brings them
    spec_counters: tuple[str, ...] = ()
    spec_counters_missing: str = ""
    spec_counters_fix: str = ""

    def metrics_advice(self, flags: dict[str, FlagValue]) -> FlagAdvice | None:
        """Why these flags serve no `/metrics` and the change that serves it; None when
        the engine serves it whatever its flags."""
        return None

    def draft_problem(self, flags: dict[str, FlagValue]) -> str | None:
        """What the speculation these flags configure lacks (a drafter its method needs)."""
        spec = self.speculation(flags)
        methods = {m.lower() for m in self.drafter_methods}
        if spec.method is None or spec.method.lower() not in methods or spec.drafter:
            return None
        return f"{spec.method} drafts with a model of its own, and no {self.drafter_where} is set"
