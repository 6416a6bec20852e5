"""Parse argparse's standard `--help` output into a `FlagSchema`.

All three engines (SGLang, vLLM, ours) build their CLI with argparse, so their help is
argparse's layout: a `usage:` block, sections like `options:` (or `optional arguments:`
before Python 3.10, or vLLM's per-config group titles), and per option an invocation
(`--flag {A,B}`, `--flag FLAG`, `--flag, --no-flag`, `--flag FLAG [FLAG ...]`) followed
by help text, either on the same line after two spaces or on indented lines below.
Types are not printed by argparse; they are inferred from choices, the default and the
metavar, and curated notes override them for the flags that matter. This is the fallback
for when the engine's parser cannot be built on the host (`introspect.py`): SGLang prints
no defaults at all, so from its help text every valued flag without choices is a string.

On/off pairs are one switch: `--x, --no-x` (BooleanOptionalAction) and vLLM's
`--enable-x, --disable-x` are printed like aliases but mean opposite things. Text after
the options at the left margin is an epilog (vLLM's `--help=all` ends with a JSON tip
whose indented `--json-arg ...` examples are not flags).
"""

from __future__ import annotations

import re

from console.backends.schema import FlagSchema, FlagSpec, FlagType

# Our engine starts each help with its value type in brackets, e.g. `[int] Draft ...`.
_TYPE_TAG_RE = re.compile(r"^\[(int|float|str|path|choice|flag|bool|json)\]\s*")
_TAG_TYPES: dict[str, FlagType] = {
    "int": "int", "float": "float", "str": "str", "path": "str", "choice": "str",
    "flag": "bool", "bool": "bool", "json": "json",
}  # fmt: skip
# The last `(default: X)` at the very end: help texts quote other defaults before it.
_DEFAULT_RE = re.compile(r"\(default:\s*((?:(?!\(default:).)*?)\)\s*$", re.S)
_OPTION_LINE_RE = re.compile(r"^(\s{1,8})(-{1,2}[A-Za-z0-9].*)$")
# A section title is short (`options:`, `ModelConfig:`, `positional arguments:`); an
# epilog sentence that happens to end in a colon is not one.
_SECTION_RE = re.compile(r"^\S[^:]{0,60}:\s*$")
_MAX_SECTION_WORDS = 4
_PAIR_PREFIXES = (("enable-", "disable-"), ("disable-", "enable-"))


def _split_invocation(text: str) -> tuple[str, str]:
    """Split `--flag FLAG, --alias FLAG   help text` into invocation and inline help."""
    match = re.search(r"\s{2,}(?=\S)", text)
    if match is None:
        return text.strip(), ""
    return text[: match.start()].strip(), text[match.end() :].strip()


def _parse_invocation(invocation: str) -> tuple[list[str], str]:
    """Option strings and the metavar text of the first one."""
    parts = re.split(r",\s+(?=-)", invocation)
    options: list[str] = []
    metavar = ""
    for i, part in enumerate(parts):
        opt, _, rest = part.partition(" ")
        options.append(opt)
        if i == 0:
            metavar = rest.strip()
    return options, metavar


def _infer_type(choices: tuple[str, ...] | None, default: str | None, metavar: str) -> FlagType:
    if not metavar:
        return "bool"
    samples = list(choices or ())
    if not samples and default not in (None, "None", "", "[]"):
        samples = [str(default)]
    if samples and all(re.fullmatch(r"-?\d+", s) for s in samples):
        return "int"
    if samples and all(re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+)([eE]-?\d+)?", s) for s in samples):
        return "float"
    return "str"


def _make_spec(invocation: str, help_lines: list[str]) -> FlagSpec | None:
    options, metavar = _parse_invocation(invocation)
    long_opts = [o for o in options if o.startswith("--")]
    if not long_opts or "--help" in long_opts:
        return None
    help_text = " ".join(line.strip() for line in help_lines if line.strip())
    default = None
    if m := _DEFAULT_RE.search(help_text):
        default = m.group(1).strip()
        help_text = help_text[: m.start()].strip()
    choices = None
    if m := re.match(r"^\[?\{([^}]*)\}", metavar):
        choices = tuple(c.strip() for c in m.group(1).split(",") if c.strip())
    multiple = "..." in metavar
    names = [o[2:] for o in long_opts]
    switch, off = None, None
    if not metavar:
        switch = "store_true"
        # BooleanOptionalAction prints `--x, --no-x`: one switch with an off spelling.
        if any(f"no-{n}" in names for n in names):
            switch, off = "negatable", f"no-{names[0]}"
        # vLLM's `--enable-x, --disable-x` (either first): opposite values, not aliases.
        for on_prefix, off_prefix in _PAIR_PREFIXES:
            pair = off_prefix + names[0].removeprefix(on_prefix)
            if names[0].startswith(on_prefix) and pair in names[1:]:
                switch, off = "enable_disable", pair
        names = [n for n in names if n != off]
    flag_type = _infer_type(choices, default, metavar)
    # An integer default (`0`, `2`) is printed the same for an int, a float and an enum
    # flag: such an "int" is a guess, and a value that is not a whole number is left to
    # the engine to judge rather than refused here.
    guessed = flag_type == "int" and not choices
    if m := _TYPE_TAG_RE.match(help_text):
        flag_type = _TAG_TYPES[m.group(1)]
        help_text = help_text[m.end() :]
        guessed = False
    if switch is not None:
        flag_type = "bool"
    return FlagSpec(
        name=names[0],
        type=flag_type,
        choices=choices,
        default=default,
        help=help_text,
        aliases=tuple(names[1:]),
        multiple=multiple,
        negatable=switch == "negatable",
        switch=switch,
        off_option=off,
        guessed=guessed,
    )


def _is_section(line: str) -> bool:
    return bool(_SECTION_RE.match(line)) and len(line.split()) <= _MAX_SECTION_WORDS


def parse_help(text: str, source: str = "") -> FlagSchema:
    """Every long option in an argparse help text; positional arguments are skipped."""
    schema = FlagSchema(source=source, source_kind="help")
    in_usage = False
    in_positionals = False
    in_epilog = False
    invocation: str | None = None
    option_indent = 0
    help_lines: list[str] = []

    def flush() -> None:
        nonlocal invocation, help_lines
        spec = _make_spec(invocation, help_lines) if invocation is not None else None
        if spec is not None and spec.name not in schema.flags:
            schema.add(spec)
        invocation, help_lines = None, []

    for raw in text.expandtabs().splitlines():
        line = raw.rstrip()
        if line.startswith("usage:"):
            in_usage = True
            continue
        if in_usage:
            if line and not line.startswith(" "):
                in_usage = False
            else:
                continue
        if not line:
            continue
        if _is_section(line):
            flush()
            in_positionals = line.lower().startswith("positional")
            in_epilog = False
            continue
        if not line[0].isspace():
            flush()  # a group description or the epilog, up to the next section title
            in_epilog = True
            continue
        if in_positionals or in_epilog:
            continue
        if m := _OPTION_LINE_RE.match(line):
            flush()
            option_indent = len(m.group(1))
            invocation, inline_help = _split_invocation(m.group(2))
            help_lines = [inline_help] if inline_help else []
            continue
        indent = len(line) - len(line.lstrip())
        if invocation is not None and indent > option_indent:
            help_lines.append(line)
        else:
            flush()  # section description text or an epilog: not part of an option
    flush()
    return schema
