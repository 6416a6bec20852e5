"""`status --json` of a never-started profile gives the argv a start would launch, and
`set --dry-run --json` the planned argv, for every engine kind (SGLang and vLLM through
their real parsers in the parser venvs; nothing is started)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from console.config import HostProfile, LaunchProfile, save_profile
from tests.console.factories import run_cli as _cli
from tests.console.fixtures.capture_engines import ENGINES, venv_dir
from tests.ports import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _profile(kind: str, tmp_path) -> HostProfile:
    launch = LaunchProfile(python=sys.executable)
    if kind != "builtin":
        venv = venv_dir(kind)
        if not (venv / "bin" / "python").exists():
            if os.environ.get("CI") == "true":
                pytest.fail(f"{venv} is missing; .ci/run builds it (capture_engines.py venv)")
            pytest.skip(f"{venv} missing: run tests/console/fixtures/capture_engines.py venv")
        launch = LaunchProfile(venv=str(venv), env=ENGINES[kind].get("env", {}))
    model = {"builtin": "model-path", "sglang": "model-path", "vllm": "model"}[kind]
    return HostProfile(
        name=f"planned-{kind}", engine=kind, port=free_port(), launch=launch,
        flags={model: "/models/m"}, state_dir=str(tmp_path / "state"),
    )  # fmt: skip


@pytest.mark.parametrize("kind", ["builtin", "sglang", "vllm"])
def test_a_stopped_profile_shows_the_argv_it_would_launch(kind: str, tmp_path) -> None:
    profile = _profile(kind, tmp_path)
    save_profile(profile)
    done = _cli("status", profile.name, "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["state"] == "stopped" and status["argv_planned"] is True
    argv = status["argv"]
    assert argv[argv.index("--port") + 1] == str(profile.port) and "/models/m" in argv
    # the engines that bind every interface by default are told loopback
    if kind == "builtin":
        assert "--host" not in argv and status["bind"] == "127.0.0.1"
    else:
        assert argv[argv.index("--host") + 1] == "127.0.0.1" and not status["bind_wide"]

    plan_done = _cli("set", profile.name, "host=0.0.0.0", "--dry-run", "--json")
    assert plan_done.returncode == 0, plan_done.stderr
    plan = json.loads(plan_done.stdout)
    # no launch config yet: nothing old, and the new argv is the planned one but the host
    assert plan["dry_run"] and plan["changed"] and plan["old_argv"] is None
    new = plan["argv"]
    assert new[new.index("--host") + 1] == "0.0.0.0"
    assert [a for a in new if a not in ("--host", "0.0.0.0", "127.0.0.1")] == [
        a for a in argv if a not in ("--host", "127.0.0.1")
    ]
    assert "+--host 0.0.0.0" in plan["diff"]
    assert not (tmp_path / "state" / profile.name / "launch.json").exists()  # nothing written
