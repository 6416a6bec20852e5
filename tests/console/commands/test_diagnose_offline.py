"""`diagnose` with typed figures needs no engine when a sweep of the flags in force is
stored: on the real bundled engine, a small sweep, then the engine stopped, then the
field report's question typed. Without a stored sweep for those flags, the sweep it
would need is refused in one sentence that says how to start the engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from console.config import save_profile
from tests.console.factories import builtin_profile
from tests.console.factories import run_cli as _cli

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[str]:
    save_profile(builtin_profile("offline", tmp_path / "state"))
    try:
        yield "offline"
    finally:
        _cli("stop", "offline", timeout=60)


def test_typed_figures_against_a_stored_sweep_with_the_engine_down(host: str) -> None:
    asked = ("diagnose", host, "--observed", "40", "--context", "512", "--text", "code")
    down = _cli(*asked)  # no sweep stored yet: the sweep it needs wants the engine
    assert down.returncode == 1 and down.stdout == "", down.stdout
    assert "not ready" in down.stderr and f"specconsole start {host}" in down.stderr

    assert _cli("start", host, "--wait").returncode == 0
    sweep = _cli("sweep", host, "--contexts", "64,512,1024", "--output", "16", "--text",
                 "code", "--repeat", "2")  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    online = _cli(*asked)
    assert online.returncode == 0, online.stderr
    assert _cli("stop", host).returncode == 0

    offline = _cli(*asked)
    assert offline.returncode == 0, offline.stderr
    assert "the engine is down" in offline.stderr
    # The same stored sweep, the same typed figure: the same verdict as with it up.
    assert offline.stdout == online.stdout
    assert "tok/s" in offline.stdout and "sweep run" in offline.stdout
