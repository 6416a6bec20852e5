"""How the console finds an engine's flags: parser first, help text as the fallback, cache.

These run on any machine: our own engine's parser is built by this interpreter, and a
launcher that is not Python stands in for an engine whose parser cannot be built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.backends import get_backend, schema_cache
from console.backends.introspect import interpreter_argv, one_sentence, probe_command, read_reply
from console.config import HostProfile, LaunchProfile
from console.service.engine_service import EngineService
from console.service.lifecycle import LifecycleEvent
from console.transport import LocalTransport

VLLM_HELP = Path(__file__).parents[1] / "fixtures" / "engines" / "vllm-0.33.0" / "help-80.txt"


def _builtin(tmp_path: Path, **flags: object) -> EngineService:
    pytest.importorskip("engine.serve.args", reason="engine server not available")
    profile = HostProfile(
        name="local-test",
        engine="builtin",
        launch=LaunchProfile(python=sys.executable),
        state_dir=str(tmp_path / "state"),
        flags=flags,
    )
    return EngineService(profile, LocalTransport())


async def test_our_engine_schema_comes_from_its_parser_and_is_cached(tmp_path: Path) -> None:
    service = _builtin(tmp_path)
    discovered = await service.schema()
    assert discovered.origin == "parser" and not discovered.cached
    assert "own argparse parser (engine.serve.args.build_parser" in discovered.schema.source
    port = discovered.schema.flags["port"]
    assert port.type == "int" and port.default == "30000"
    assert discovered.schema.flags["skip-server-warmup"].switch == "store_true"
    assert discovered.schema.flags["decode-log-interval"].help.startswith("Print")
    started = time.perf_counter()
    again = await _builtin(tmp_path).schema()
    assert again.cached and again.schema.names() == discovered.schema.names()
    assert time.perf_counter() - started < 5


def test_cache_entries_hold_only_for_their_fingerprint(tmp_path: Path) -> None:
    fp = {"engine_version": "0.5.23", "source": ["/x", 1, 2], "python": "3.11.7"}
    schema_cache.save("gpu1", "sglang", ["/venv/bin/python"], fp, {"dump": {"actions": []}})
    assert schema_cache.load("gpu1", "sglang", ["/venv/bin/python"], fp) is not None
    upgraded = {**fp, "engine_version": "0.5.24"}
    assert schema_cache.load("gpu1", "sglang", ["/venv/bin/python"], upgraded) is None
    assert schema_cache.load("gpu2", "sglang", ["/venv/bin/python"], fp) is None
    assert schema_cache.load("gpu1", "sglang", ["/usr/bin/python3"], fp) is None


async def test_first_start_uses_the_engines_spelling_with_a_notice(tmp_path: Path) -> None:
    service = _builtin(tmp_path, **{"speculative-dflash-draft-window-size": 64})
    async with service.subscribe() as subscription:
        config = await service._first_config()
        events: list[LifecycleEvent] = subscription.pending()
    assert config.flags["speculative-draft-window-size"] == 64
    assert "--speculative-dflash-draft-window-size" not in config.argv
    assert [e.message for e in events] == [
        "--speculative-dflash-draft-window-size is now --speculative-draft-window-size in "
        "builtin 0.1.0; launching with --speculative-draft-window-size."
    ]


async def test_our_engine_refuses_in_its_own_words(tmp_path: Path) -> None:
    from console.errors import FlagError

    service = _builtin(tmp_path)
    with pytest.raises(FlagError) as err:
        await service.plan({"port": "http"})
    assert str(err.value) == (
        "--port expects a whole number (int), not 'http' (builtin 0.1.0: argument --port: "
        "expected a port number, got 'http')."
    )
    plan = await service.plan({"skip-server-warmup": "true"})
    assert plan.checked_by and "--skip-server-warmup" in plan.new.argv


async def test_a_launcher_that_is_not_python_falls_back_to_help_all(tmp_path: Path) -> None:
    """`vllm serve` through a wrapper: the console reads `--help=all`, says so, and keeps
    vLLM's JSON tip (`--json-arg ...`) out of the flags."""
    wrapper = tmp_path / "vllm-wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\n[ "$2" = "--help=all" ] && exec cat {VLLM_HELP}\nexit 2\n')
    wrapper.chmod(0o755)
    profile = HostProfile(
        name="wrapped",
        engine="vllm",
        launch=LaunchProfile(command=[str(wrapper), "serve"]),
        state_dir=str(tmp_path / "state"),
    )
    discovered = await get_backend("vllm").discover_schema(LocalTransport(), profile)
    assert discovered.origin == "help" and discovered.interpreter is None
    assert discovered.schema.source.startswith("`--help=all` on local (help text, because")
    assert len(discovered.schema.flags) == 320
    assert not [n for n in discovered.schema.names() if "json-arg" in n]
    assert discovered.schema.resolve("disable-prefix-caching").name == "enable-prefix-caching"


def test_interpreter_of_each_launcher_form() -> None:
    launch = LaunchProfile()
    assert interpreter_argv(launch, ["/v/bin/python", "-m", "sglang.launch_server"]) == [
        "/v/bin/python"
    ]
    assert interpreter_argv(launch, ["python3.11", "-X", "utf8", "-m", "x"]) == [
        "python3.11",
        "-X",
        "utf8",
    ]
    assert interpreter_argv(launch, ["vllm", "serve"]) is None


def test_engine_errors_become_one_sentence() -> None:
    assert one_sentence("argument --tp-size: invalid int value: 'x'") == (
        "argument --tp-size: invalid int value: 'x'"
    )
    assert one_sentence("Error: --enable-auto-tool-choice requires --tool-call-parser") == (
        "--enable-auto-tool-choice requires --tool-call-parser"
    )
    pydantic = "1 validation error for SpeculativeConfig\nmethod\n  Input should be 'dflash'"
    assert one_sentence(pydantic) == "1 validation error for SpeculativeConfig"
    assert one_sentence("Bad value. Use another one.") == "Bad value"


@pytest.mark.parametrize("old_install", [True, False])
def test_a_host_without_engine_serve_gets_a_reason(tmp_path: Path, old_install: bool) -> None:
    """The probe on a host whose engine predates `engine.serve` (flags in engine.serve_args,
    started as engine.server) says so, instead of a bare ModuleNotFoundError."""
    if old_install:
        (tmp_path / "engine").mkdir()
        (tmp_path / "engine" / "__init__.py").write_text("")
        (tmp_path / "engine" / "serve_args.py").write_text("def build_parser(): pass\n")
    # -S: no site-packages, so only the folder it runs in can supply `engine`.
    done = subprocess.run(
        [sys.executable, "-S", *probe_command([])],
        input=json.dumps(get_backend("builtin").probe_request("dump")),
        # PYTHONPATH would supply this checkout's engine even under -S
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    error = read_reply(done.stdout)["probe_error"]
    if old_install:
        assert "predates the engine.serve package" in error and "install this console" in error
    else:
        assert "no builtin engine" in error
