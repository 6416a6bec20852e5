"""The flag schema of an engine: what flags exist, their types, choices and defaults.

A schema is discovered from the engine's own argparse parser on the host
(`introspect.py`), or from its `--help` text when that cannot run (`helpparse.py`), and
then annotated with curated notes on the flags operators actually tune (`notes.py`).

On/off flags come in four argparse forms, and the console keeps one logical switch per
flag whatever the form, so a value always means the same thing: `True` is the flag's
canonical spelling given, `False` its off spelling where the engine has one.

- `store_true` (and `store_false`, `store_const`): `--x` only; off = leave it out.
- `negatable` (BooleanOptionalAction): `--x` / `--no-x`.
- `enable_disable` (vLLM's pairs): `--enable-x` / `--disable-x`, or the other way round
  when the engine lists `--disable-x` first; typing either name reaches the one switch,
  and the off name stores the opposite value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from console.config import FlagValue, normalize_flag_name

FlagType = Literal["str", "int", "float", "bool", "json"]
SwitchKind = Literal["store_true", "store_false", "store_const", "negatable", "enable_disable"]


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
    switch: SwitchKind | None = None  # how an on/off flag is spelled (module docstring)
    off_option: str | None = None  # the spelling that turns the switch off, if any
    off_aliases: tuple[str, ...] = ()  # other (hidden) spellings that turn it off
    human: bool = False  # an int that also takes SI/IEC suffixes (`200k`), engine-parsed
    guessed: bool = False  # the type was inferred from help text (a default of `0`, say)
    required: bool = False
    hidden: bool = False  # help=SUPPRESS: accepted, not listed
    deprecated: bool = False

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
            "switch": self.switch,
            "off_option": self.off_option,
            "human": self.human,
            "required": self.required,
            "hidden": self.hidden,
            "deprecated": self.deprecated,
        }


@dataclass
class FlagSchema:
    """Flags by canonical name, with lookup by any accepted spelling."""

    flags: dict[str, FlagSpec] = field(default_factory=dict)
    source: str = ""  # how it was obtained, for messages (e.g. "`... --help` on gpu1")
    engine_version: str | None = None  # when the source says it
    source_kind: Literal["parser", "help", ""] = ""  # the engine's argparse, or its help text
    renamed: dict[str, str] = field(default_factory=dict)  # old spelling -> flag name

    def __post_init__(self) -> None:
        self._by_alias: dict[str, str] = {}
        self._inverse: dict[str, str] = {}  # off spelling -> switch name
        for spec in self.flags.values():
            self._index(spec)
        for old, new in self.renamed.items():
            self._by_alias.setdefault(old, new)

    def _index(self, spec: FlagSpec) -> None:
        self._by_alias[spec.name] = spec.name
        for alias in spec.aliases:
            self._by_alias.setdefault(alias, spec.name)
        for off in (spec.off_option, *spec.off_aliases) if spec.off_option else ():
            self._by_alias.setdefault(off, spec.name)
            self._inverse[off] = spec.name

    def is_off_spelling(self, name: str) -> bool:
        """`disable-x` for an `enable-x` switch: a true value there means the switch off."""
        return normalize_flag_name(name) in self._inverse

    def rename(self, old: str, into: str) -> None:
        """`old` is a spelling this engine no longer accepts; it now means `into`."""
        self.renamed[old] = into
        self._by_alias[old] = into

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

    def canonical(self, flags: dict[str, FlagValue]) -> tuple[dict[str, FlagValue], list[str]]:
        """`flags` keyed by the spelling this engine uses, and a one-line notice per rename.

        An off spelling of a switch (`disable-prefix-caching = true`) becomes the switch
        with the opposite value; a renamed spelling (`speculative-dflash-draft-window-size`
        on an engine that only takes `speculative-draft-window-size`) becomes the new name.
        Unknown names pass through unchanged: the engine's own check refuses them.
        """
        out: dict[str, FlagValue] = {}
        notices: list[str] = []
        for raw_name, value in flags.items():
            name = normalize_flag_name(raw_name)
            spec = self.resolve(name)
            if spec is None:
                out[name] = value
                continue
            if self.is_off_spelling(name) and isinstance(value, bool):
                value = not value
            if name in self.renamed:
                where = f" in {self.engine_version}" if self.engine_version else ""
                notices.append(
                    f"--{name} is now --{spec.name}{where}; launching with --{spec.name}."
                )
            out[spec.name] = value
        return out, notices


def flag_to_argv(spec_name: str, value: FlagValue, spec: FlagSpec | None = None) -> list[str]:
    """One flag as argv elements. Values are separate elements: never shell-parsed."""
    opt = f"--{spec_name}"
    if isinstance(value, bool) and (spec is None or spec.type == "bool"):
        if value:
            return [opt]
        if spec is not None and spec.off_option:
            return [f"--{spec.off_option}"]
        return [f"--no-{spec_name}"] if spec is not None and spec.negatable else []
    if spec is not None and spec.multiple and isinstance(value, str):
        return [opt, *value.split()]
    return [opt, str(value)]


def flags_to_argv(flags: dict[str, FlagValue], schema: FlagSchema | None = None) -> list[str]:
    argv: list[str] = []
    for name, value in flags.items():
        argv += flag_to_argv(name, value, schema.resolve(name) if schema else None)
    return argv
