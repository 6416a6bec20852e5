"""The engine's own argparse parser, asked on the host: flag schema and dry-run checks.

`hostprobe.py` runs under the engine's interpreter (found from the profile's launcher)
and answers in JSON; this module sends it, reads the answer, and turns the parser's
actions into a `FlagSchema` with the engine's real types, defaults, choices and switch
forms. The program travels as the `-c` argument of an argv list and the request as JSON
on stdin, so neither is ever spliced into a shell script of ours (over SSH the argv is
quoted element by element, like every command).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.backends.schema import FlagSchema, FlagSpec, FlagType
from console.config import LaunchProfile
from console.errors import ConsoleError
from console.settings import DEFAULT_SETTINGS
from console.transport.base import Command, Transport

PROBE_SOURCE = (Path(__file__).with_name("hostprobe.py")).read_text()
MARKER = "@@specconsole-probe@@"
# Our engine starts each help with its type in brackets (`[int] ...`), for help readers.
_TYPE_TAG_RE = re.compile(r"^\[(int|float|str|path|choice|flag|bool|json)\]\s*")
_DOCUMENTED_DEFAULT_RE = re.compile(r"\(default: ([^()]*)\)\s*$")
_PYTHON_RE = re.compile(r"(^|/)(python[0-9.]*|pypy[0-9.]*)$")


class ProbeFailed(Exception):
    """The probe could not run or build the parser; the message says why (one line)."""


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    error: str = ""
    values: dict[str, Any] | None = None
    stage: str = ""  # "parse_args" (argparse refused) or "validate" (the engine's own check)


def interpreter_argv(launch: LaunchProfile, launcher: list[str]) -> list[str] | None:
    """The interpreter (plus its own options) that runs the engine, when it is Python.

    `python -m sglang.launch_server` -> `python`; a venv -> `<venv>/bin/python`; a
    `command` whose first word is a Python interpreter -> that word. A console script
    (`vllm serve`) has its interpreter in its shebang: `resolve_script_interpreter` reads it.
    """
    if not launcher:
        return None
    first = launcher[0]
    if _PYTHON_RE.search(first):
        # Keep interpreter options that change what imports (`-I`, `-X ...`), drop `-m mod`.
        opts: list[str] = []
        rest = launcher[1:]
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            opts.append(rest.pop(0))
            if opts[-1] in ("-X", "-W") and rest:  # options that take a value
                opts.append(rest.pop(0))
        return [first, *opts]
    return None


async def resolve_script_interpreter(transport: Transport, script: str) -> list[str] | None:
    """`#!/path/python` of a console script on the host (found on PATH when bare)."""
    path = script
    if "/" not in script:
        found = await transport.run(
            ["sh", "-c", 'command -v -- "$1"', "sh", script],
            timeout=DEFAULT_SETTINGS.command_timeout_s,
        )
        if not found.ok or not found.stdout.strip():
            return None
        path = found.stdout.strip().splitlines()[-1]
    try:
        head = (await transport.read_file(path))[:256].decode(errors="replace")
    except (OSError, ValueError, ConsoleError):
        return None
    if not head.startswith("#!"):
        return None
    words = shlex.split(head[2:].splitlines()[0])
    if words and words[0].endswith("/env") and len(words) > 1:
        words = words[1:]
    return words if words and _PYTHON_RE.search(words[0]) else None


def probe_command(python: list[str]) -> list[str]:
    # -u: the answer is not lost in a buffer if the engine's import hooks exit hard.
    return [*python, "-u", "-c", PROBE_SOURCE]


def read_reply(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                reply = json.loads(line[len(MARKER) :])
            except ValueError as exc:
                raise ProbeFailed(f"the probe's answer is not JSON ({exc})") from None
            if not isinstance(reply, dict):
                raise ProbeFailed("the probe's answer is not a JSON object")
            return reply
    raise ProbeFailed("the interpreter printed no probe answer")


async def run_probe(
    transport: Transport,
    command: Command,
    request: dict[str, Any],
    timeout: float,
) -> dict[str, Any]:
    """Run the probe (`command` = `probe_command` wrapped with the profile's env/workdir)."""
    result = await transport.run(command, input=json.dumps(request), timeout=timeout)
    try:
        reply = read_reply(result.stdout)
    except ProbeFailed as exc:
        reason = result.last_line() or str(exc)
        raise ProbeFailed(f"exit {result.exit_code}: {reason}") from None
    if "probe_error" in reply:
        raise ProbeFailed(_first_line(str(reply["probe_error"])))
    return reply


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else text.strip()


# -- dump -> schema ---------------------------------------------------------------------


def _display_default(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        return " ".join(str(v) for v in value) if value else "[]"
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def spec_from_action(action: dict[str, Any]) -> FlagSpec | None:
    """One dumped argparse action as a `FlagSpec`; None for positionals and short-only."""
    options = [o for o in action.get("options", []) if o.startswith("--")]
    if not options:
        return None
    names = [o[2:] for o in options]
    shorts = [o.lstrip("-") for o in action.get("options", []) if not o.startswith("--")]
    hidden = [o[2:] for o in action.get("hidden_options", []) if o.startswith("--")]
    off = [o[2:] for o in action.get("off_options", []) if o.startswith("--")]
    hidden_off = [o[2:] for o in action.get("hidden_off_options", []) if o.startswith("--")]
    switch = action.get("switch")
    flag_type: FlagType = action.get("type") or "str"
    if flag_type not in ("str", "int", "float", "bool", "json"):
        flag_type = "str"
    if switch == "store_const":
        flag_type = "bool"
    nargs = action.get("nargs")
    multiple = nargs in ("+", "*") or (isinstance(nargs, int) and nargs > 1)
    choices = action.get("choices")
    help_text = _TYPE_TAG_RE.sub("", str(action.get("help") or ""))
    default = _display_default(action.get("default"))
    if default is None and (m := _DOCUMENTED_DEFAULT_RE.search(help_text)):
        # argparse's default is None but the engine resolves one later and says which in
        # its help (our engine: `(default: <bundled drafter>)`); checks need that value.
        default = None if m.group(1) in ("None", "") else m.group(1)
    return FlagSpec(
        name=names[0],
        type=flag_type,
        choices=tuple(str(c) for c in choices) if choices else None,
        default=default,
        help=help_text,
        aliases=tuple(dict.fromkeys([*names[1:], *shorts, *hidden])),
        multiple=multiple,
        negatable=switch == "negatable",
        switch=switch,
        off_option=off[0] if off else None,
        off_aliases=tuple([*off[1:], *hidden_off]),
        human="human_readable" in str(action.get("type_name") or ""),
        required=bool(action.get("required")),
        hidden=bool(action.get("hidden")),
        deprecated=bool(action.get("deprecated")),
    )


def schema_from_dump(dump: dict[str, Any], source: str) -> FlagSchema:
    schema = FlagSchema(source=source)
    fingerprint = dump.get("fingerprint") or {}
    schema.engine_version = fingerprint.get("engine_version")
    for action in dump.get("actions", []):
        spec = spec_from_action(action)
        if spec is not None and spec.name not in schema.flags:
            schema.add(spec)
    return schema


# -- check ------------------------------------------------------------------------------


def check_from_reply(reply: dict[str, Any]) -> CheckResult:
    if reply.get("ok"):
        values = reply.get("values")
        return CheckResult(True, values=values if isinstance(values, dict) else {})
    return CheckResult(
        False, error=one_sentence(str(reply.get("error", ""))), stage=reply.get("stage", "")
    )


def one_sentence(message: str) -> str:
    """An engine's error, cut to its first line and sentence, without a trailing period.

    argparse says `argument --tp-size/--tensor-parallel-size: invalid int value: 'x'`;
    pydantic-backed parsers (vLLM's JSON configs) say several lines of detail, of which the
    first names the problem.
    """
    text = _first_line(message)
    text = re.sub(r"^(error|Error):\s*", "", text)
    cut = re.search(r"(?<=[a-z0-9'\")\]])\.\s+(?=[A-Z])", text)
    if cut:
        text = text[: cut.start()]
    text = text.rstrip(" .")
    return text if len(text) <= 300 else text[:297] + "..."
