"""The console against real SGLang 0.5.23 and vLLM 0.33.0: their argparsers, help, switches.

Two layers. The fixture tests read what `fixtures/capture_engines.py` captured from the
real programs (help at 80 and 200 columns, a raw argparse dump, the console's probe
answer) and run everywhere. The live tests build the engines' real parsers in the venv
that script makes (`.engines-venv/`, built by `.ci/run`) and parse what the console
emits with them: they skip on a machine without it, and fail under `CI=true`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.backends import get_backend
from console.backends.helpparse import parse_help
from console.backends.introspect import schema_from_dump
from console.backends.notes import merge_notes
from console.backends.schema import FlagSchema, flags_to_argv
from console.config import HostProfile, LaunchProfile
from console.errors import FlagError
from console.service.engine_service import EngineService
from console.service.flags import ModelLimits, apply_changes, coerce
from console.transport import LocalTransport

FIXTURES = Path(__file__).parents[1] / "fixtures"
ENGINES = {"sglang": "sglang-0.5.23", "vllm": "vllm-0.33.0"}
sys.path.insert(0, str(FIXTURES))
import capture_engines  # noqa: E402

# Every test here runs the engines' own parser venvs (a real part): the slow tier.
pytestmark = pytest.mark.slow

# What the raw dump's `type` (argparse's callable, by qualified name) means, written
# independently of the probe's classification.
RAW_TYPES = {
    "int": "int", "float": "float", "str": "str", "loads": "json", "nullable_str": "str",
    "human_readable_int": "int", "human_readable_int_or_auto": "int",
    "_compute_kwargs.<locals>.parse_dataclass": "json", "union_dict_and_str": "str",
    "parse_reasoning_parser": "str",
}  # fmt: skip


def _load(engine: str, name: str) -> dict:
    return json.loads((FIXTURES / "engines" / ENGINES[engine] / name).read_text())


def _schema(engine: str) -> tuple[FlagSchema, dict]:
    schema = schema_from_dump(_load(engine, "probe.json"), f"{engine} fixture")
    schema.source_kind = "parser"
    schema.engine_version = ENGINES[engine].replace("-", " ")
    return schema, merge_notes(schema, get_backend(engine).notes)


def _raw_flags(engine: str) -> dict[str, dict]:
    """Long-option actions by their first visible long option."""
    out = {}
    for action in _load(engine, "argparse.json")["actions"]:
        longs = [o for o in action["option_strings"] if o.startswith("--")]
        if longs and action["action"] != "_HelpAction":
            out[longs[0][2:]] = action
    return out


def _raw_kind(action: dict) -> str | None:
    if action["nargs"] == 0:
        return "bool"
    name = action["type"] or "str"
    if name in ("optional_type.<locals>._optional_type", "parse_type.<locals>._parse_type"):
        name = next((c for c in action["type_closure"] if c), name)  # vLLM's wrapper
        if name == "optional_type.<locals>._optional_type":
            return None
    return RAW_TYPES.get(name)


# -- the probe's reading of the parser == the parser ------------------------------------


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_probe_agrees_with_argparse_on_every_flag(engine: str) -> None:
    raw = _raw_flags(engine)
    schema = schema_from_dump(_load(engine, "probe.json"), "fixture")
    assert set(schema.names()) == set(raw)
    wrong = []
    for name, action in raw.items():
        spec = schema.flags[name]
        expected_type = _raw_kind(action)
        if expected_type is not None and spec.type != expected_type:
            wrong.append((name, "type", spec.type, expected_type))
        if action["choices"] is not None and list(spec.choices or ()) != action["choices"]:
            wrong.append((name, "choices", spec.choices, action["choices"]))
        default = ast.literal_eval(action["default"]) if _literal(action["default"]) else ...
        if default == "==SUPPRESS==":  # argparse's "no default": the attribute stays unset
            default = None
        if default is not ... and not isinstance(default, list | dict | set | tuple):
            shown = None if default is None else str(default)
            if spec.default != shown:
                wrong.append((name, "default", spec.default, shown))
        off = [o[2:] for o in action["negative_option_strings"] if o in action["option_strings"]]
        if off and spec.off_option != off[0]:
            wrong.append((name, "off", spec.off_option, off[0]))
    assert wrong == []


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return True


def test_sglang_types_and_defaults_are_the_parsers() -> None:
    schema, _ = _schema("sglang")
    assert len(schema.flags) == 529 + 2  # visible options + the two help=SUPPRESS ones
    assert schema.flags["mem-fraction-static"].type == "float"
    assert schema.flags["tp-size"].type == "int" and schema.flags["tp-size"].default == "1"
    assert schema.resolve("tensor-parallel-size").name == "tp-size"
    assert schema.flags["speculative-eagle-topk"].type == "int"
    ctx = schema.flags["context-length"]
    assert ctx.type == "int" and ctx.human
    with_defaults = [s for s in schema if s.default is not None]
    assert len(with_defaults) >= 164
    # Switches show their real defaults (None for a BooleanOptionalAction left unset).
    assert schema.flags["enable-tf32-matmul"].switch == "negatable"
    assert schema.flags["enable-tf32-matmul"].default is None
    assert schema.flags["trust-remote-code"].default == "False"
    for bad, flag in (
        ("abc", "mem-fraction-static"),
        ("eight", "tp-size"),
        ("1.5", "speculative-eagle-topk"),
    ):
        with pytest.raises(FlagError, match="expects"):
            coerce(schema.flags[flag], bad)
    assert coerce(schema.flags["tp-size"], "8") == 8
    assert coerce(ctx, "200k") == "200k"  # the engine's parser makes it 200000
    with pytest.raises(FlagError, match="whole number"):
        coerce(ctx, "lots")


def test_sglang_notes_only_annotate_what_this_version_has() -> None:
    schema, roles = _schema("sglang")
    assert "speculative-ddtree-budget" not in schema.flags and "tree_budget" not in roles
    assert "DDTREE" not in schema.flags["speculative-algorithm"].note
    assert schema.flags["speculative-dflash-block-size"].name == "speculative-dflash-block-size"
    assert roles["block_size"] == "speculative-num-draft-tokens"
    assert "cuda-graph-max-bs" not in schema.flags
    flags, notices = schema.canonical(
        {"speculative-dflash-draft-window-size": 4096, "cuda-graph-max-bs": 64}
    )
    assert flags == {"speculative-draft-window-size": 4096, "cuda-graph-max-bs-decode": 64}
    assert notices == [
        "--speculative-dflash-draft-window-size is now --speculative-draft-window-size in "
        "sglang 0.5.23; launching with --speculative-draft-window-size.",
        "--cuda-graph-max-bs is now --cuda-graph-max-bs-decode in sglang 0.5.23; launching "
        "with --cuda-graph-max-bs-decode.",
    ]


def test_vllm_switch_pairs_are_one_switch_each() -> None:
    schema, roles = _schema("vllm")
    assert len(schema.flags) == 320 and roles["context_length"] == "max-model-len"
    assert not [n for n in schema.names() if n.startswith("json-arg")]
    spec = schema.resolve("disable-prefix-caching")
    assert spec.name == "enable-prefix-caching" and spec.switch == "enable_disable"

    def emitted(changes: dict[str, str]) -> list[str]:
        new = apply_changes(schema, roles, {}, changes, ModelLimits(), "vllm on gpu1")
        return flags_to_argv(new, schema)

    assert emitted({"disable-prefix-caching": "true"}) == ["--disable-prefix-caching"]
    assert emitted({"enable-prefix-caching": "false"}) == ["--disable-prefix-caching"]
    assert emitted({"enable-prefix-caching": "true"}) == ["--enable-prefix-caching"]
    assert emitted({"disable-prefix-caching": "false"}) == ["--enable-prefix-caching"]
    # The pair listed disable-first keeps its own spelling for "on".
    assert emitted({"enable-uvicorn-access-log": "true"}) == ["--enable-uvicorn-access-log"]
    assert emitted({"enforce-eager": "false"}) == ["--no-enforce-eager"]
    assert "ddtree" not in schema.flags["speculative-config"].note.lower()
    assert "TREE_ATTN" not in schema.flags["attention-backend"].note


# -- the help text, as the fallback, agrees where help can tell ---------------------------


HELP_FILES = [(e, w) for e in sorted(ENGINES) for w in (80, 200)]


@pytest.mark.parametrize(("engine", "width"), HELP_FILES)
def test_help_parser_agrees_with_argparse(engine: str, width: int) -> None:
    text = (FIXTURES / "engines" / ENGINES[engine] / f"help-{width}.txt").read_text()
    schema = parse_help(text)
    raw = {n: a for n, a in _raw_flags(engine).items() if not a["hidden"]}
    assert set(schema.names()) == set(raw)
    for name, action in raw.items():
        spec = schema.flags[name]
        if action["choices"] is not None:  # a set's order is the capture run's hash order
            assert sorted(spec.choices or ()) == sorted(action["choices"]), name
        # Help never shows SGLang's types; what the help parser claims for sure is right (a
        # guess from an integer default like `0` never refuses a value: the engine judges).
        if spec.type in ("int", "float") and not spec.guessed and _raw_kind(action):
            assert _raw_kind(action) == spec.type, name
        assert (spec.type == "bool") == (action["nargs"] == 0), name
        off = [o[2:] for o in action["negative_option_strings"] if o in action["option_strings"]]
        if off:
            assert spec.off_option == off[0], name
        if engine == "vllm" and _literal(action["default"]):
            default = ast.literal_eval(action["default"])
            if isinstance(default, bool | int | float | str) and default not in (
                "",
                "==SUPPRESS==",
            ):
                assert spec.default == str(default), name


def test_vllm_plain_help_lists_no_flags_so_the_console_asks_for_all() -> None:
    summary = (FIXTURES / "engines" / "vllm-0.33.0" / "help-summary-80.txt").read_text()
    assert parse_help(summary).names() == []
    assert get_backend("vllm").help_args[0] == "--help=all"


# -- live: the real parsers ---------------------------------------------------------------


def _venv_python(engine: str) -> Path:
    python = capture_engines.venv_python(engine)
    if not python.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{python} is missing; .ci/run must build it (capture_engines.py venv)")
        pytest.skip(f"{python} missing: run tests/console/fixtures/capture_engines.py venv")
    return python


BATCH_PARSE = r"""
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("hostprobe", os.environ["SPECCONSOLE_PROBE"])
probe = importlib.util.module_from_spec(spec); spec.loader.exec_module(probe)
parser, _, _ = probe.BUILDERS[sys.argv[1]](
    json.loads(os.environ["SPECCONSOLE_PROBE_MODULES"]))
def refuse(message): raise ValueError(message)
parser.error = refuse
out = []
for argv in json.loads(sys.stdin.read()):
    try:
        out.append({k: probe._jsonable(v) for k, v in vars(parser.parse_args(argv)).items()})
    except ValueError as exc:
        out.append({"error": str(exc)})
print("@@batch@@ " + json.dumps(out))
"""


def _parse_many(engine: str, argvs: list[list[str]]) -> list[dict]:
    env = capture_engines.probe_env(engine)
    out = subprocess.run(
        [str(_venv_python(engine)), "-c", BATCH_PARSE, engine],
        input=json.dumps(argvs), capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return capture_engines._marked(out.stdout, "@@batch@@ ")


def _switch_cases(engine: str) -> list[tuple[str, str, list[str], object]]:
    """(flag, state, argv, the value argparse must produce) for every switch."""
    schema, _ = _schema(engine)
    raw = _raw_flags(engine)
    cases = []
    for spec in schema:
        if spec.type != "bool" or spec.switch is None:
            continue
        action = raw[spec.name]
        default = ast.literal_eval(action["default"]) if _literal(action["default"]) else None
        on = {"store_false": False, "store_const": ast.literal_eval(action["const"])}.get(
            spec.switch, True
        )
        cases.append((spec.name, "unset", flags_to_argv({}, schema), default))
        cases.append((spec.name, "on", flags_to_argv({spec.name: True}, schema), on))
        if spec.off_option:
            cases.append((spec.name, "off", flags_to_argv({spec.name: False}, schema), False))
            # The off spelling typed by a user reaches the same switch, off.
            new = apply_changes(schema, {}, {}, {spec.off_option: "true"}, ModelLimits(), "x")
            cases.append((spec.name, "off-name", flags_to_argv(new, schema), False))
    return cases


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_switch_round_trips_through_the_real_parser(engine: str) -> None:
    _venv_python(engine)
    base = ["--model-path", "/m"] if engine == "sglang" else []
    raw = _raw_flags(engine)
    cases = _switch_cases(engine)
    results = _parse_many(engine, [base + argv for _, _, argv, _ in cases])
    wrong = []
    for (name, state, argv, expected), got in zip(cases, results, strict=True):
        value = got.get(raw[name]["dest"], got.get("error"))
        if value != expected:
            wrong.append((name, state, argv, expected, value))
    assert wrong == []
    forms = {raw[name]["action"] for name, *_ in cases}
    if engine == "vllm":
        assert {"EnableDisableAction", "_StoreTrueAction"} <= forms
    else:
        assert {"BooleanOptionalAction", "_StoreTrueAction"} <= forms


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_live_probe_still_matches_the_committed_capture(engine: str) -> None:
    _venv_python(engine)
    live = capture_engines.probe(engine, {"op": "dump"})
    assert live["actions"] == _load(engine, "probe.json")["actions"]


KIMI = HostProfile(
    name="kimi",
    engine="sglang",
    model_path="/models/Kimi-K2.6",
    draft_model_path="/models/Kimi-K2.6-DFlash",
    flags={
        "speculative-algorithm": "DFLASH",
        "speculative-num-draft-tokens": 16,
        "speculative-dflash-draft-window-size": 4096,  # the old spelling, renamed
        "context-length": "200000",
        "reasoning-parser": "kimi_k2",
        "tool-call-parser": "kimi_k2",
        "tp-size": 8,
        "trust-remote-code": True,
        "mem-fraction-static": 0.85,
    },
)
VLLM_DFLASH = HostProfile(
    name="vllm-dflash",
    engine="vllm",
    port=8000,
    model_path="/models/Qwen3.5-27B",
    draft_model_path="/models/Qwen3.5-27B-DFlash",
    flags={
        "speculative-config": json.dumps({"method": "dflash", "num_speculative_tokens": 15}),
        "attention-backend": "FLASH_ATTN",
        "max-num-batched-tokens": 32768,
        "max-model-len": "200k",
        "tensor-parallel-size": 8,
        "disable-prefix-caching": True,
        "enable-auto-tool-choice": True,
        "tool-call-parser": "kimi_k2",
    },
)


def _service(profile: HostProfile, tmp_path: Path) -> EngineService:
    engine = profile.engine
    launch = LaunchProfile(
        python=str(_venv_python(engine)), env=capture_engines.ENGINES[engine].get("env", {})
    )
    return EngineService(
        profile.model_copy(update={"launch": launch, "state_dir": str(tmp_path / "state")}),
        LocalTransport(),
    )


async def test_kimi_sglang_profile_starts_with_what_sglang_accepts(tmp_path: Path) -> None:
    service = _service(KIMI, tmp_path)
    discovered = await service.schema()
    assert discovered.origin == "parser" and "sglang 0.5.23's own argparse parser" in (
        discovered.schema.source
    )
    config = service.config_for(service.backend.initial_flags(service.profile))
    assert "--speculative-draft-window-size" in config.argv
    assert "--speculative-dflash-draft-window-size" not in config.argv
    assert any("now --speculative-draft-window-size" in n for n in discovered.notices)
    check = await service.backend.check_flags(
        service.transport, service.profile, discovered, config.flags
    )
    assert check is not None and check.ok, check
    values = check.values or {}
    assert (values["tp_size"], values["context_length"], values["mem_fraction_static"]) == (
        8, 200000, 0.85,
    )  # fmt: skip
    assert values["speculative_draft_window_size"] == 4096
    assert values["speculative_algorithm"] == "DFLASH" and values["trust_remote_code"] is True
    # A second session finds the schema in the cache (same engine version, same python).
    again = await _service(KIMI, tmp_path).schema()
    assert again.cached and again.schema.names() == discovered.schema.names()


async def test_vllm_dflash_profile_parses_under_vllms_parser(tmp_path: Path) -> None:
    service = _service(VLLM_DFLASH, tmp_path)
    discovered = await service.schema()
    assert discovered.origin == "parser" and len(discovered.schema.flags) == 320
    config = service.config_for(service.backend.initial_flags(service.profile))
    assert "--disable-prefix-caching" in config.argv
    check = await service.backend.check_flags(
        service.transport, service.profile, discovered, config.flags
    )
    assert check is not None and check.ok, check
    values = check.values or {}
    assert values["enable_prefix_caching"] is False and values["max_model_len"] == 200000
    spec = values["speculative_config"]
    assert spec["method"] == "dflash" and spec["model"] == "/models/Qwen3.5-27B-DFlash"
    assert spec["num_speculative_tokens"] == 15


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"tp-size": "eight"},
            "--tp-size expects a whole number (int), not 'eight' (sglang 0.5.23: argument "
            "--tp-size/--tensor-parallel-size: invalid int value: 'eight').",
        ),
        ({"mem-fraction-static": "abc"}, "invalid float value: 'abc'"),
        ({"speculative-eagle-topk": "1.5"}, "invalid int value: '1.5'"),
        ({"speculative-draft-windw-size": "64"}, "(closest: --speculative-draft-window-size"),
        ({"context-length": "200q"}, "whole number (int), not '200q' (sglang 0.5.23: argument "),
    ],
)
async def test_bad_sglang_values_are_refused_in_the_engines_words(
    tmp_path: Path, changes: dict[str, str], expected: str
) -> None:
    service = _service(KIMI, tmp_path)
    with pytest.raises(FlagError) as err:
        await service.plan(changes)
    assert expected in str(err.value) and "\n" not in str(err.value)


async def test_set_stores_numbers_and_the_engine_reads_200k(tmp_path: Path) -> None:
    service = _service(KIMI, tmp_path)
    plan = await service.plan({"tp-size": "4", "context-length": "128k"})
    assert plan.new.flags["tp-size"] == 4 and plan.new.flags["context-length"] == 128000
    assert plan.checked_by.startswith("sglang 0.5.23's own argparse parser")
    # The engine's own check refuses what argparse types cannot: a whole-line problem.
    vllm = _service(VLLM_DFLASH, tmp_path / "v")
    with pytest.raises(FlagError, match="requires --tool-call-parser; nothing was changed"):
        await vllm.plan({"tool-call-parser": None})
