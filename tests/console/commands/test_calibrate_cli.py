"""`specconsole calibrate HOST`: bad input is one sentence; on the real engine it measures
blocks across restarts with unchanged flags, stores the profile, and `--show` reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from console.config import HostProfile, save_profile
from console.service import EngineService
from tests.console.commands.test_history_cli import one_sentence_error
from tests.console.conftest import engine_service
from tests.console.factories import builtin_profile


def _cli(*args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "console.cli", "calibrate", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=os.environ.copy())


def _profile(tmp_path: Path) -> HostProfile:
    profile = builtin_profile("cal-local", tmp_path / "state")
    save_profile(profile)
    return profile


def test_bad_input_and_a_missing_profile_are_one_sentence(tmp_path: Path) -> None:
    _profile(tmp_path)
    assert "--blocks 2 or more" in one_sentence_error(_cli("cal-local", "--blocks", "1"))
    assert "No noise profile is stored for cal-local" in one_sentence_error(
        _cli("cal-local", "--show")
    )


@pytest_asyncio.fixture
async def service(tmp_path: Path) -> AsyncIterator[EngineService]:
    async with engine_service(_profile(tmp_path), start=True) as svc:
        yield svc


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_calibrate_measures_restarts_and_stores_the_profile(service: EngineService) -> None:
    pytest.importorskip("engine.serve.app", reason="engine server not available")
    before = dict((await service.current_config()).flags)
    out = _cli("cal-local", "--blocks", "2", "--rounds", "2", "--baseline-contexts", "64",
               "--baseline-output", "24", "--baseline-text", "code", "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    profile = json.loads(out.stdout)
    assert len(profile["shifts"]) == 1 and len(profile["restart_s"]) == 1
    assert 0 < profile["restart_s"][0] < 120 and profile["order"] in ("A-B-A-B", "A-B")
    ((point),) = profile["points"]
    assert (point["text_type"], point["context"], point["n"]) == ("code", 64, 8)
    assert dict((await service.current_config()).flags) == before  # unchanged flags
    shown = _cli("cal-local", "--show")
    assert shown.returncode == 0 and "block-to-block shift with unchanged flags" in shown.stdout
    assert "request-to-request step time" in shown.stdout
