"""The flag schema of an engine: what flags exist, their types, choices and defaults.

A schema is discovered from the engine's own `--help` on the host (`helpparse.py`) and
then annotated with curated notes on the flags operators actually tune (`notes.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from console.config import FlagValue, normalize_flag_name

FlagType = Literal["str", "int", "float", "bool", "json"]


@dataclass(frozen=True)
class FlagSpec:
    name: str  # canonical spelling, dashed, no leading "--"
    type: FlagType = "str"
    choices: tuple[str, ...] | None = None
    default: str | None = None  # as the help text prints it
    help: str = ""
    aliases: tuple[str, ...] = ()  # other spellings the engine accepts
    multiple: bool = False  # nargs: the value is a list of arguments
    negatable: bool = False  # BooleanOptionalAction: `--no-<name>` exists
    note: str = ""  # curated operator note
    tuned: bool = False  # one of the flags operators tune all day
    minimum: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "type": self.type,
            "choices": list(self.choices) if self.choices else None,
            "default": self.default,
            "help": self.help,
            "aliases": list(self.aliases),
            "multiple": self.multiple,
            "note": self.note,
            "tuned": self.tuned,
        }


@dataclass
class FlagSchema:
    """Flags by canonical name, with lookup by any accepted spelling."""

    flags: dict[str, FlagSpec] = field(default_factory=dict)
    source: str = ""  # how it was obtained, for messages (e.g. "`... --help` on gpu1")

    def __post_init__(self) -> None:
        self._by_alias: dict[str, str] = {}
        for spec in self.flags.values():
            self._index(spec)

    def _index(self, spec: FlagSpec) -> None:
        self._by_alias[spec.name] = spec.name
        for alias in spec.aliases:
            self._by_alias.setdefault(alias, spec.name)

    def add(self, spec: FlagSpec) -> None:
        self.flags[spec.name] = spec
        self._index(spec)

    def replace(self, name: str, **changes: object) -> None:
        self.flags[name] = replace(self.flags[name], **changes)  # type: ignore[arg-type]
        self._index(self.flags[name])

    def fold(self, old: str, into: str) -> None:
        """Make `old` a spelling of `into` (an engine listing both names of one flag)."""
        self.flags.pop(old, None)
        self._by_alias[old] = into

    def resolve(self, name: str) -> FlagSpec | None:
        canonical = self._by_alias.get(normalize_flag_name(name))
        return self.flags.get(canonical) if canonical else None

    def __contains__(self, name: str) -> bool:
        return self.resolve(name) is not None

    def __iter__(self) -> Iterable[FlagSpec]:  # type: ignore[override]
        return iter(self.flags.values())

    def names(self) -> list[str]:
        return list(self.flags)


def flag_to_argv(spec_name: str, value: FlagValue, spec: FlagSpec | None = None) -> list[str]:
    """One flag as argv elements. Values are separate elements: never shell-parsed."""
    opt = f"--{spec_name}"
    if isinstance(value, bool):
        if value:
            return [opt]
        return [f"--no-{spec_name}"] if spec is not None and spec.negatable else []
    if spec is not None and spec.multiple and isinstance(value, str):
        return [opt, *value.split()]
    return [opt, str(value)]


def flags_to_argv(flags: dict[str, FlagValue], schema: FlagSchema | None = None) -> list[str]:
    argv: list[str] = []
    for name, value in flags.items():
        argv += flag_to_argv(name, value, schema.resolve(name) if schema else None)
    return argv
