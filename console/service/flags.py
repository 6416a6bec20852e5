"""Flag changes: parse `key=value`, validate against the schema, and diff.

Everything here is pure except `ModelLimits.read`, which reads the models' config.json on
the host. Validation errors are `FlagError`s raised before anything is written. These
checks are the quick local ones (types, choices, the draft window against the block
size); the engine's own parser then judges the whole command line on the host
(`EngineService.plan`), and its words are what the user reads when it refuses.
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
import shlex
from dataclasses import dataclass

from console.backends.notes import Role
from console.backends.schema import FlagSchema, FlagSpec
from console.config import FlagValue, normalize_flag_name
from console.errors import FlagError
from console.transport.base import Transport, TransportError

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
# What SGLang's and vLLM's `human_readable_int` take besides plain digits: `200k`, `1.5M`,
# `32Ki` (the engine decides the exact meaning of each suffix), and vLLM's `auto`.
_HUMAN_INT_RE = re.compile(r"\d+(\.\d+)?([kKmMgGtT]i?)|auto")


class FlagValueError(FlagError):
    """A value of the wrong type; carries the flag and the text for the engine's opinion."""

    def __init__(self, message: str, spec: FlagSpec, raw: str) -> None:
        super().__init__(message)
        self.spec = spec
        self.raw = raw


def parse_assignments(items: list[str]) -> dict[str, str | None]:
    """`key=value` pairs; `key=` (empty value) means unset, back to the engine default."""
    changes: dict[str, str | None] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = normalize_flag_name(key)
        if not sep or not key:
            raise FlagError(f"{item!r} is not key=value (e.g. speculative-draft-window-size=64).")
        changes[key] = value if value != "" else None
    return changes


def coerce(spec: FlagSpec, raw: str) -> FlagValue:
    """A typed value for one flag, or a `FlagError` naming the flag and the problem."""
    opt = f"--{spec.name}"
    if "\x00" in raw:
        raise FlagError(
            f"The value for {opt} contains a NUL byte, which no command line can carry."
        )
    if spec.type == "bool":
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise FlagError(f"{opt} is a switch; give true or false, not {raw!r}.")
    if spec.choices is not None and raw not in spec.choices:
        close = difflib.get_close_matches(raw, spec.choices, n=1, cutoff=0.5) or [
            c for c in spec.choices if c.lower() == raw.lower()
        ]
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise FlagError(
            f"{raw!r} is not a valid value for {opt}; "
            f"choose one of {', '.join(spec.choices)}{hint}."
        )
    value: FlagValue = raw
    if spec.type == "int":
        try:
            value = int(raw.strip())
        except ValueError:
            if spec.guessed:
                return raw.strip()  # a help-text "int" may be a float or an enum: engine decides
            if not (spec.human and _HUMAN_INT_RE.fullmatch(raw.strip())):
                raise FlagValueError(
                    f"{opt} expects a whole number (int), not {raw!r}.", spec, raw
                ) from None
            value = raw.strip()  # `200k`: the engine's parser turns it into a number
    elif spec.type == "float":
        try:
            value = float(raw.strip())
        except ValueError:
            raise FlagValueError(
                f"{opt} expects a number (float), not {raw!r}.", spec, raw
            ) from None
    elif spec.type == "json":
        try:
            json.loads(raw)
        except ValueError as exc:
            raise FlagValueError(
                f"{opt} expects JSON, but {raw!r} does not parse ({exc}).", spec, raw
            ) from None
    if spec.minimum is not None and isinstance(value, int | float) and value < spec.minimum:
        raise FlagError(f"{opt} must be at least {spec.minimum:g}, not {value}.")
    return value


def canonical_flags(schema: FlagSchema, flags: dict[str, FlagValue]) -> dict[str, FlagValue]:
    """Flags keyed by the spelling this engine uses (renames applied, off spellings of a
    switch turned into the switch with the opposite value); see `FlagSchema.canonical`."""
    return schema.canonical(flags)[0]


def engine_parsed_ints(
    schema: FlagSchema, flags: dict[str, FlagValue], values: dict[str, object]
) -> dict[str, FlagValue]:
    """`context-length = "200k"` as the number the engine's own parser made of it."""
    out = dict(flags)
    for name, value in flags.items():
        spec = schema.resolve(name)
        if spec is None or spec.type != "int" or not isinstance(value, str):
            continue
        parsed = values.get(spec.name.replace("-", "_"))
        if isinstance(parsed, int) and not isinstance(parsed, bool):
            out[name] = parsed
    return out


def unknown_flag(schema: FlagSchema, key: str, where: str) -> FlagError:
    names = [n for n in schema.names() if not schema.flags[n].hidden]
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
    if not close:  # `windw-size`: a word of the flag may still be there
        words = set(key.split("-"))
        close = [n for n in names if len(words & set(n.split("-"))) >= 2][:3]
    if len(close) == 1:
        hint = f" (did you mean --{close[0]}?)"
    elif close:
        hint = " (closest: " + ", ".join(f"--{c}" for c in close) + ")"
    else:
        hint = ""
    return FlagError(f"--{key} is not a flag of {where}{hint}; nothing was changed.")


@dataclass(frozen=True)
class ModelLimits:
    """What the model files on the host allow: context length and drafter block size."""

    max_position_embeddings: int | None = None
    model_source: str = ""
    block_size: int | None = None
    block_source: str = ""

    @classmethod
    async def read(
        cls, transport: Transport, model_path: str | None, draft_path: str | None
    ) -> ModelLimits:
        model = await _read_config(transport, model_path)
        draft = await _read_config(transport, draft_path)
        max_pos = _find_int(model[0], "max_position_embeddings") if model else None
        block = _find_int(draft[0], "block_size") if draft else None
        return cls(
            max_position_embeddings=max_pos,
            model_source=model[1] if model else "",
            block_size=block,
            block_source=draft[1] if draft else "",
        )


async def _read_config(transport: Transport, path: str | None) -> tuple[dict, str] | None:
    # A model given as a hub id (not a directory on the host) has no local config to read.
    if not path:
        return None
    config_path = posixpath.join(path, "config.json")
    try:
        data = json.loads(await transport.read_file(config_path))
    except (FileNotFoundError, ValueError, TransportError, IsADirectoryError, NotADirectoryError):
        return None
    return (data, config_path) if isinstance(data, dict) else None


def _find_int(config: dict, key: str) -> int | None:
    """`key` at the top level or one level down (e.g. `dflash_config.block_size`)."""
    candidates = [config, *(v for v in config.values() if isinstance(v, dict))]
    for level in candidates:
        value = level.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def apply_changes(
    schema: FlagSchema,
    roles: dict[Role, str],
    current: dict[str, FlagValue],
    changes: dict[str, str | None],
    limits: ModelLimits,
    where: str,
) -> dict[str, FlagValue]:
    """The new flag set, or a `FlagError` for the first problem found."""
    new = canonical_flags(schema, current)
    for key, raw in changes.items():
        spec = schema.resolve(key)
        if spec is None:
            raise unknown_flag(schema, key, where)
        if raw is None:
            new.pop(spec.name, None)
            continue
        value = coerce(spec, raw)
        if isinstance(value, bool) and schema.is_off_spelling(key):
            value = not value  # `disable-prefix-caching=true` is `enable-prefix-caching` off
        new[spec.name] = value
    check_consistency(new, roles, limits)
    return new


def _int_flag(flags: dict[str, FlagValue], name: str | None) -> int | None:
    if name is None or name not in flags:
        return None
    value = flags[name]
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_consistency(
    flags: dict[str, FlagValue], roles: dict[Role, str], limits: ModelLimits
) -> None:
    window_flag = roles.get("draft_window")
    window = _int_flag(flags, window_flag)
    block = _int_flag(flags, roles.get("block_size"))
    block_source = f"--{roles.get('block_size')}" if block is not None else limits.block_source
    if block is None:
        block = limits.block_size
    if window is not None and block is not None and window < block:
        raise FlagError(
            f"--{window_flag} {window} is below the draft block size {block} (from "
            f"{block_source}); use at least {block}. Nothing was changed."
        )
    ctx_flag = roles.get("context_length")
    ctx = _int_flag(flags, ctx_flag)
    limit = limits.max_position_embeddings
    if ctx is not None and limit is not None and ctx > limit:
        raise FlagError(
            f"--{ctx_flag} {ctx} is above the model's limit of {limit} tokens "
            f"(max_position_embeddings in {limits.model_source}). Nothing was changed."
        )


def render_flags(flags: dict[str, FlagValue]) -> list[str]:
    """One line per flag, sorted, values shell-quoted: the text the diff is made of."""
    lines = []
    for name in sorted(flags):
        value = flags[name]
        if isinstance(value, bool):
            lines.append(f"--{name}" if value else f"--{name}=false")
        else:
            lines.append(f"--{name} {shlex.quote(str(value))}")
    return lines


def unified_diff(old: dict[str, FlagValue], new: dict[str, FlagValue], label: str) -> str:
    diff = difflib.unified_diff(
        render_flags(old), render_flags(new), f"a/{label}", f"b/{label}", lineterm=""
    )
    return "\n".join(diff)
