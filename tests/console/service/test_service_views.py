"""The views both faces read: flag view with effective values, key flags with their
source, the rollback plan and the service state text, as plain functions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from console.backends import get_adapter
from console.backends.schema import FlagSchema
from console.config import HostProfile
from console.service import LifecycleEvent
from console.service.engine_service import EngineService
from console.service.flag_view import build_flag_view, key_flag_rows, read_flag_view
from console.service.launch import LaunchConfig
from console.service.rollback import NO_CHANGE, plan_rollback
from console.service.state_text import service_state
from console.transport import LocalTransport
from tests.console.tui import fakes

SCHEMA = FlagSchema({s.name: s for s in fakes.SPECS}, source="fixed")


def test_rows_show_the_engines_value_over_the_launch_config_over_the_default() -> None:
    info = {**fakes.INFO, "context_length": 4096}  # the engine runs with another value
    view = build_flag_view(SCHEMA, fakes.ROLES, fakes.FLAGS, info)
    algo = view.row("speculative-algorithm")
    assert (algo.current, algo.effective, algo.value, algo.source) == (
        None, "DDTREE", "DDTREE", "engine",
    )  # fmt: skip
    ctx = view.row("context-length")
    assert (ctx.current, ctx.effective, ctx.source, ctx.differs) == (2048, 4096, "engine", True)
    assert not view.row("speculative-draft-window-size").differs  # 1024 both ways
    port = view.row("port")
    assert (port.value, port.source) == (30000, "launch config")
    level = view.row("log-level")
    assert (level.value, level.source, level.kind) == ("info", "default", "{debug,info}")
    assert view.effective == {
        "speculative-algorithm": "DDTREE",
        "speculative-num-draft-tokens": 16,
        "speculative-ddtree-budget": 15,
        "speculative-draft-window-size": 1024,
        "context-length": 4096,
    }
    # The list `flags` shows by default: tuned or set ones; `--all` adds the rest.
    assert [r.name for r in view.listed()] == [s.name for s in fakes.SPECS if s.name != "log-level"]
    assert len(view.listed(show_all=True)) == len(fakes.SPECS)


def test_config_spellings_are_the_engines_own() -> None:
    specs = [replace(s, aliases=("context-len",)) if s.name == "context-length" else s
             for s in fakes.SPECS]  # fmt: skip
    schema = FlagSchema({s.name: s for s in specs}, source="fixed")
    view = build_flag_view(schema, {}, {"context-len": 1, "not-a-flag": "x"})
    assert view.current == {"context-length": 1, "not-a-flag": "x"}
    assert view.row("context-length").current == 1
    assert view.row("not-a-flag") is None  # rows are the schema's flags


def test_key_flags_say_where_each_value_came_from() -> None:
    rows = key_flag_rows(fakes.FLAGS, fakes.ROLES, SCHEMA, fakes.INFO)
    assert rows == [
        ("algorithm", "DDTREE", "engine"),
        ("draft tokens (block)", "16", "engine"),
        ("draft window", "1024", "engine"),
        ("tree budget", "15", "engine"),
        ("context length", "2048", "engine"),
        ("reasoning parser", "-", "default"),  # the help prints None: no value
        # no tool-call parser: this engine has no such flag
    ]
    stopped = key_flag_rows(fakes.FLAGS, fakes.ROLES, SCHEMA, None)
    assert stopped[0] == ("algorithm", "DDTREE", "default")
    assert stopped[2] == ("draft window", "1024", "launch config")
    assert stopped[1] == ("draft tokens (block)", "the drafter's block size", "default")


def test_speculation_in_one_json_flag_heads_the_key_flags() -> None:
    # vLLM: no speculation flag by name, the method and drafts inside --speculative-config
    specs = [s for s in fakes.SPECS if not s.name.startswith("speculative-")]
    schema = FlagSchema({s.name: s for s in specs}, source="fixed")
    flags = {"speculative-config": '{"method": "dflash", "num_speculative_tokens": 15}'}
    view = build_flag_view(schema, {}, flags, None)
    assert view.key_flags()[0].label == "context length"  # nothing says speculation
    spec = get_adapter("vllm").speculation(flags)
    first = replace(view, speculation=spec).key_flags()[0]
    assert (first.label, first.value) == ("speculation", "dflash, 15 draft tokens")
    # an engine with the flags by name keeps its own rows
    named = replace(build_flag_view(SCHEMA, fakes.ROLES, fakes.FLAGS, None), speculation=spec)
    assert named.key_flags()[0].label == "algorithm"


def test_key_flags_without_a_schema_use_the_usual_names() -> None:
    rows = key_flag_rows({"context-length": 512}, {}, None, {"speculative_algorithm": "DFLASH"})
    assert rows[0] == ("algorithm", "DFLASH", "engine")
    assert ("context length", "512", "launch config") in rows
    assert ("tool-call parser", "-", "default") in rows


async def test_read_flag_view_asks_the_engine_only_when_told() -> None:
    service = fakes.FakeService()
    asked = await read_flag_view(service)
    assert asked.effective["speculative-algorithm"] == "DDTREE"
    quiet = await read_flag_view(service, ask_engine=False)
    assert quiet.effective == {}
    given = await read_flag_view(service, info={"port": 1}, ask_engine=False)
    assert given.effective == {"port": 1}


def test_state_text_prefers_a_running_actions_event() -> None:
    ready = fakes.status("ready")
    loading = LifecycleEvent("loading", percent=40)
    assert service_state(ready, loading, running=True) == ("loading", "40%")
    assert service_state(ready, loading, running=False) == ("ready", "")
    assert service_state(None, None, running=False) == ("unknown", "reading state…")
    assert service_state(None, loading, running=False) == ("unknown", "reading state…")
    assert service_state(fakes.FAILED, None, running=False) == ("failed", "exit code 1")
    assert service_state(fakes.status("loading", percent=7), None, False) == ("loading", "7%")


async def test_rollback_plan_from_a_real_launch_store(tmp_path: Path) -> None:
    profile = HostProfile(name="lab", state_dir=str(tmp_path / "state"))
    service = EngineService(profile, LocalTransport("lab"))
    store = await service.store()

    nothing = await plan_rollback(service, "lab")
    assert not nothing.possible and not nothing.changed
    assert nothing.text.startswith("There is no last-good config for lab yet")
    assert nothing.text.count(".") == 1  # one sentence

    good = LaunchConfig(engine="builtin", flags={"context-length": 1024}, argv=["x"])
    await store.write_last_good(good)
    await store.write_current(LaunchConfig(engine="builtin", flags={"context-length": 4096},
                                           argv=["x"]))  # fmt: skip
    plan = await plan_rollback(service, "lab")
    assert plan.possible and plan.changed and plan.last_good.flags == good.flags
    assert plan.text == plan.diff
    assert "-" + "--context-length 4096" in plan.diff and "+--context-length 1024" in plan.diff
    assert "a/lab:launch.json" in plan.diff

    await store.write_current(good)
    same = await plan_rollback(service, "lab")
    assert same.possible and not same.changed and same.text == NO_CHANGE
