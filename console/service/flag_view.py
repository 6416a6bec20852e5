"""The engine's flags as an operator reads them: launch-config value, the value the engine
reports it runs with, default, and which of those is shown.

`specconsole flags`, `specconsole status`, the TUI's flags form and its dashboard all read
one `FlagView`, so a flag has the same value and the same source in every face. The key
flags (the few an operator tunes all day) are the view's key subset, `key_flag_rows`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from console.backends.adapter import Speculation
from console.backends.schema import FlagSchema, FlagSpec
from console.backends.schema_discovery import DiscoveredSchema
from console.config import FlagValue
from console.errors import ConsoleError
from console.service.launch import LaunchConfig

Source = Literal["engine", "launch config", "default"]

# (label, schema role, flag name when the engine names no role). The roles let an engine
# spell a flag its own way (vLLM's names differ from SGLang's) and still be found here.
KEY_FLAGS: tuple[tuple[str, str | None, str], ...] = (
    ("algorithm", None, "speculative-algorithm"),
    ("draft tokens (block)", "block_size", "speculative-num-draft-tokens"),
    ("draft window", "draft_window", "speculative-draft-window-size"),
    ("tree budget", "tree_budget", "speculative-ddtree-budget"),
    ("context length", "context_length", "context-length"),
    ("reasoning parser", None, "reasoning-parser"),
    ("tool-call parser", None, "tool-call-parser"),
)


def kind_text(spec: FlagSpec) -> str:
    """`{a,b,c}` for a flag with choices, else its type."""
    return "{" + ",".join(spec.choices) + "}" if spec.choices else spec.type


def value_text(value: object | None) -> str:
    """A value as typed on a command line; switches as true/false."""
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _default(spec: FlagSpec | None) -> str | None:
    # Help texts print an unset default as "None"; that is no value to show.
    if spec is None or spec.default in (None, "None"):
        return None
    return spec.default


def _reported(info: Mapping[str, Any] | None, name: str) -> Any:
    # /get_server_info keys are the argparse dests: dashes become underscores.
    return None if info is None else info.get(name.replace("-", "_"))


@dataclass(frozen=True)
class FlagRow:
    """One flag: what the launch config says, what the engine reports, and the default."""

    name: str
    current: FlagValue | None  # the launch config's value, None when unset
    effective: Any  # what the running engine reports, None where it reports nothing
    default: str | None  # as the engine's help prints it, None when it has none
    spec: FlagSpec | None = None  # None for a config flag the schema does not know

    @property
    def source(self) -> Source:
        """Where the shown value comes from: the engine's word beats the config's."""
        if self.effective is not None:
            return "engine"
        if self.current is not None:
            return "launch config"
        return "default"

    @property
    def value(self) -> Any:
        """The value to show: effective, else launch config, else default."""
        for candidate in (self.effective, self.current, self.default):
            if candidate is not None:
                return candidate
        return None

    @property
    def kind(self) -> str:
        return kind_text(self.spec) if self.spec is not None else "str"

    @property
    def note(self) -> str:
        """The curated note, else the engine's help text."""
        if self.spec is None:
            return ""
        return self.spec.note or self.spec.help

    @property
    def differs(self) -> bool:
        """The engine runs with something other than the launch config says (a restart not
        done yet, or a `200k` the engine's parser turned into a number)."""
        return (
            self.effective is not None
            and self.current is not None
            and value_text(self.effective) != value_text(self.current)
        )


@dataclass(frozen=True)
class KeyFlag:
    """One line of the key-flags panel (dashboard) and of `specconsole status`."""

    label: str
    name: str
    value: str  # "-" when there is no value at all
    source: Source

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.label, self.value, self.source)

    def as_dict(self) -> dict[str, str]:
        return {"label": self.label, "flag": self.name, "value": self.value, "source": self.source}


@dataclass(frozen=True)
class FlagView:
    """Every flag of the engine's schema with its values; built by `build_flag_view`."""

    schema: FlagSchema | None
    roles: Mapping[str, str]
    current: dict[str, FlagValue]  # the launch config, keyed by the engine's spelling
    info: Mapping[str, Any] | None = None  # /get_server_info, when the engine answered
    rows: tuple[FlagRow, ...] = field(default=())
    warnings: tuple[str, ...] = ()  # e.g. a bind wider than loopback
    # what the flags speculate with, as the engine's adapter reads them (vLLM keeps it in
    # one JSON flag, so no per-setting key flag shows it)
    speculation: Speculation | None = None

    @property
    def source(self) -> str:
        """Where the schema came from (the engine's parser, its help text)."""
        return self.schema.source if self.schema is not None else "no schema"

    @property
    def effective(self) -> dict[str, Any]:
        """The values the engine reports, for the flags of its schema that it reports."""
        return {row.name: row.effective for row in self.rows if row.effective is not None}

    def row(self, name: str) -> FlagRow | None:
        for row in self.rows:
            if row.name == name:
                return row
        return None

    def listed(self, show_all: bool = False, extra: set[str] | frozenset[str] = frozenset()):
        """The rows a flag list shows: tuned or set ones (or `extra`), all with `show_all`."""
        return [
            row
            for row in self.rows
            if row.spec is not None
            and (show_all or row.spec.tuned or row.current is not None or row.name in extra)
        ]

    def key_flags(self) -> list[KeyFlag]:
        """The flags that decide decode speed and output shape, each with its source; where
        the engine has none of the speculation flags by name, the speculation its adapter
        reads from the launch config (method and draft tokens) heads the list."""
        out = []
        for label, role, fallback in KEY_FLAGS:
            name = self.roles.get(role, fallback) if role else fallback
            spec = self.schema.resolve(name) if self.schema is not None else None
            if self.schema is not None and spec is None:
                continue  # this engine has no such flag
            canonical = spec.name if spec else name
            row = self.row(canonical) or FlagRow(
                canonical, self.current.get(canonical), _reported(self.info, canonical),
                _default(spec), spec,
            )  # fmt: skip
            value = row.value
            out.append(KeyFlag(label, canonical, "-" if value is None else str(value), row.source))
        named = {k.label for k in out} & {label for label, _, _ in KEY_FLAGS[:4]}
        if self.speculation is not None and not named:
            out.insert(0, KeyFlag("speculation", "speculative config",
                                  self.speculation.describe(), "launch config"))  # fmt: skip
        return out


def build_flag_view(
    schema: FlagSchema | None,
    roles: Mapping[str, str],
    flags: Mapping[str, FlagValue],
    info: Mapping[str, Any] | None = None,
) -> FlagView:
    """The view of `flags` (a launch config's) against the schema and what the engine reports.

    Without a schema (discovery failed) there are no rows, but the key flags still show
    from the config and the engine under their usual names."""
    current: dict[str, FlagValue] = {}
    for name, value in flags.items():
        spec = schema.resolve(name) if schema is not None else None
        current[spec.name if spec else name] = value
    rows = tuple(
        FlagRow(spec.name, current.get(spec.name), _reported(info, spec.name), _default(spec), spec)
        for spec in (schema or ())
    )
    return FlagView(schema=schema, roles=roles, current=current, info=info, rows=rows)


def key_flag_rows(
    flags: Mapping[str, FlagValue],
    roles: Mapping[str, str],
    schema: FlagSchema | None,
    info: Mapping[str, Any] | None,
) -> list[tuple[str, str, str]]:
    """(label, value, where the value comes from) for the key flags of a launch config."""
    return [k.as_tuple() for k in build_flag_view(schema, roles, flags, info).key_flags()]


class _ServiceLike(Protocol):
    async def schema(self) -> DiscoveredSchema: ...
    async def current_config(self) -> LaunchConfig: ...
    async def server_info(self) -> dict | None: ...


async def engine_reports(service: _ServiceLike) -> dict | None:
    """/get_server_info when the engine is up and has one; None when it is not (stopped,
    loading, unreachable, or an engine such as vLLM that has no such endpoint)."""
    with contextlib.suppress(ConsoleError):
        return await service.server_info()
    return None


async def read_flag_view(
    service: _ServiceLike,
    *,
    info: Mapping[str, Any] | None = None,
    ask_engine: bool = True,
    schema_required: bool = True,
) -> FlagView:
    """The flag view of `service`'s current launch config.

    `info` is what the engine last reported (the TUI polls it); without it and with
    `ask_engine` the engine is asked once. With `schema_required=False` a schema that
    cannot be discovered leaves a view of the config alone (for `status`, which must
    answer even then); otherwise its error propagates."""

    async def schema() -> DiscoveredSchema | None:
        try:
            return await service.schema()
        except ConsoleError:
            if schema_required:
                raise
            return None

    config, discovered = await asyncio.gather(service.current_config(), schema())
    if info is None and ask_engine:
        info = await engine_reports(service)
    if discovered is None:
        view = build_flag_view(None, {}, config.flags, info)
    else:
        view = build_flag_view(discovered.schema, discovered.roles, config.flags, info)
    adapter = getattr(service, "backend", None)
    speculation = adapter.speculation(dict(config.flags)) if adapter is not None else None
    return replace(view, warnings=launch_warnings(service, config.flags), speculation=speculation)


def launch_warnings(service: object, flags: Mapping[str, FlagValue]) -> tuple[str, ...]:
    """What an operator should know about these flags before anything else (the engine's
    adapter says: a bind wider than loopback)."""
    adapter = getattr(service, "backend", None)
    if adapter is None:
        return ()
    warning = adapter.bind(dict(flags)).warning()
    return (warning,) if warning else ()
