"""Flag validation and diffs (pure), and the no-unquoted-input property (real shells)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.backends.helpparse import parse_help
from console.backends.notes import SGLANG_NOTES, merge_notes
from console.errors import FlagError
from console.service.flags import (
    ModelLimits,
    apply_changes,
    coerce,
    parse_assignments,
    unified_diff,
)
from console.service.launch import LaunchConfig, ServiceFiles
from console.service.process_supervisor import ProcessSupervisor
from console.transport import LocalTransport

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(scope="module")
def sglang():
    schema = parse_help((FIXTURES / "sglang_help.txt").read_text())
    return schema, merge_notes(schema, SGLANG_NOTES)


LIMITS = ModelLimits(
    max_position_embeddings=32768, model_source="/m/config.json",
    block_size=16, block_source="/d/config.json",
)  # fmt: skip


def test_parse_assignments() -> None:
    assert parse_assignments(["--context_length=4096", "reasoning-parser="]) == {
        "context-length": "4096",
        "reasoning-parser": None,
    }
    with pytest.raises(FlagError, match="not key=value"):
        parse_assignments(["context-length"])


def test_apply_changes_types_aliases_and_unset(sglang) -> None:
    schema, roles = sglang
    current = {"model-path": "/m", "speculative-dflash-draft-window-size": 64, "page-size": 1}
    new = apply_changes(
        schema, roles, current,
        {"speculative-draft-window-size": "128", "trust-remote-code": "yes", "page-size": None},
        LIMITS, "sglang on gpu1",
    )  # fmt: skip
    # The old spelling found in an existing config is folded into the one the engine uses.
    assert new == {
        "model-path": "/m",
        "speculative-draft-window-size": 128,
        "trust-remote-code": True,
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"speculative-draft-windw-size": "64"},
            "not a flag of sglang on gpu1 (closest: --speculative-draft-window-size, ",
        ),
        ({"context-length": "lots"}, "--context-length expects a whole number (int), not 'lots'"),
        ({"speculative-algorithm": "dflash"}, "did you mean DFLASH?"),
        ({"attention-backend": "cudnn"}, "choose one of flashinfer"),
        ({"trust-remote-code": "maybe"}, "is a switch"),
        (
            {"speculative-draft-window-size": "8"},
            "below the draft block size 16 (from /d/config.json)",
        ),
        (
            {"speculative-draft-window-size": "8", "speculative-num-draft-tokens": "10"},
            "below the draft block size 10 (from --speculative-num-draft-tokens)",
        ),
        ({"context-length": "65536"}, "above the model's limit of 32768 tokens"),
        ({"page-size": "0"}, "--page-size must be at least 1"),
    ],
)
def test_invalid_changes_are_one_clear_sentence(sglang, changes, message) -> None:
    schema, roles = sglang
    with pytest.raises(FlagError) as err:
        apply_changes(schema, roles, {"model-path": "/m"}, changes, LIMITS, "sglang on gpu1")
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_limits_unknown_means_no_cross_check(sglang) -> None:
    schema, roles = sglang
    new = apply_changes(
        schema, roles, {}, {"speculative-draft-window-size": "2", "context-length": "999999"},
        ModelLimits(), "x",
    )  # fmt: skip
    assert new["speculative-draft-window-size"] == 2


def test_json_flag_must_parse() -> None:
    schema = parse_help(
        "options:\n  --speculative-config SPECULATIVE_CONFIG\n                        JSON\n"
    )
    schema.replace("speculative-config", type="json")
    spec = schema.resolve("speculative-config")
    assert coerce(spec, '{"method": "dflash"}') == '{"method": "dflash"}'
    with pytest.raises(FlagError, match="expects JSON"):
        coerce(spec, "{method: dflash}")


def test_unified_diff_shows_only_the_change() -> None:
    old = {"model-path": "/m", "speculative-draft-window-size": 64}
    new = {"model-path": "/m", "speculative-draft-window-size": 128}
    diff = unified_diff(old, new, "gpu1:launch.json")
    assert diff.splitlines()[:2] == ["--- a/gpu1:launch.json", "+++ b/gpu1:launch.json"]
    assert "---speculative-draft-window-size 64" in diff
    assert "+--speculative-draft-window-size 128" in diff
    assert unified_diff(old, dict(old), "x") == ""


# -- nothing a user types reaches a shell unquoted -------------------------------------

ARGV_DUMP = "import json, sys; json.dump(sys.argv[1:], open(sys.argv[1], 'w'))"
user_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=0,
    max_size=40,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=user_text, env_value=user_text)
async def test_flag_values_reach_the_engine_verbatim(
    tmp_path: Path, value: str, env_value: str
) -> None:
    """Start a fake engine through the process supervisor (the same sh scripts and
    setsid wrapper as production); it records its argv and env, which must be exact."""
    files = ServiceFiles(str(tmp_path / "svc"))
    dump = str(tmp_path / "argv.json")
    Path(dump).unlink(missing_ok=True)
    argv = [sys.executable, "-c",
            ARGV_DUMP + "; import os; json.dump(os.environ.get('X_VAL'), "
            "open(sys.argv[1] + '.env', 'w'))",
            dump, "--reasoning-parser", value, f"--x={value}"]  # fmt: skip
    config = LaunchConfig("builtin", {}, argv, env={"X_VAL": env_value}, workdir=str(tmp_path))
    supervisor = ProcessSupervisor(LocalTransport(), files)
    await supervisor.start(config)
    for _ in range(200):
        if (await supervisor.state()).state != "running":
            break
        await asyncio.sleep(0.02)
    assert json.loads(Path(dump).read_text()) == [dump, "--reasoning-parser", value, f"--x={value}"]
    assert json.loads(Path(dump + ".env").read_text()) == env_value
    assert (await supervisor.state()).exit_code == 0


@settings(max_examples=40, deadline=None)
@given(args=st.lists(user_text, min_size=1, max_size=4))
async def test_argv_commands_are_never_shell_parsed(args: list[str]) -> None:
    result = await LocalTransport().run(["printf", "%s\\0", *args])
    assert result.stdout.split("\0")[:-1] == args
