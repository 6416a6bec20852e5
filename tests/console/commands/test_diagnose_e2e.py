"""`diagnose` on the real bundled engine: what the operator types as a context is a prompt
length, a prompt beyond the engine's context length is one sentence naming the limit,
and the sweep it suggests for a short baseline, run exactly as printed, covers it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.config import save_profile
from tests.console.factories import builtin_profile
from tests.console.factories import run_cli as _cli

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[str]:
    save_profile(builtin_profile("dlocal", tmp_path / "state"))  # fmt: skip
    try:
        yield "dlocal"
    finally:
        _cli("stop", "dlocal", timeout=60)


def test_typed_contexts_refusals_and_a_suggested_sweep_run_as_printed(host: str) -> None:
    assert _cli("start", host, "--wait").returncode == 0
    sweep = _cli("sweep", host, "--contexts", "64,512", "--output", "32", "--text",
                 "code,prose", "--repeat", "2")  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr

    # The field report's question on a 2048-token engine: one sentence naming the limit.
    out = _cli("diagnose", host, "--observed", "32", "--context", "5000", "--baseline", "138",
               "--baseline-context", "13")  # fmt: skip
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "context length of 2048 tokens" in out.stderr

    # A baseline at prompt 13 sits below the stored sweep (prompt 64 + 16 = 80 mid-decode).
    asked = (
        "diagnose",
        host,
        "--observed",
        "300",
        "--context",
        "512",
        "--text",
        "prose",
        "--baseline",
        "700",
        "--baseline-context",
        "13",
        "--baseline-text",
        "code",
    )
    out = _cli(*asked)
    assert out.returncode == 0, out.stderr
    assert "outside the swept contexts" in out.stdout
    offer = next(line.split("to settle it: ", 1)[1] for line in out.stdout.splitlines()
                 if "to settle it: " in line)  # fmt: skip
    argv = shlex.split(offer)
    assert argv[:3] == ["specconsole", "sweep", host] and "13," in offer, offer

    ran = _cli(*argv[1:])  # exactly as printed
    assert ran.returncode == 0, ran.stderr
    again = _cli(*asked)
    assert again.returncode == 0, again.stderr
    assert "outside the swept contexts" not in again.stdout, again.stdout
    assert "prompt 13 + 32 out (mid-decode context 29)" in again.stdout
    assert "carries this host's noise" in again.stdout  # typed figures carry the noise

    # The same prompts re-sent at one point (`--passages same`): paired, no passage term
    # in the residual, and no settling run (it would measure today's engine twice).
    same = _cli("diagnose", host, "--observed", "300", "--context", "512", "--text", "code",
                "--observed-requests", "3", "--baseline", "400", "--baseline-context", "512",
                "--baseline-requests", "3", "--passages", "same", "--json")  # fmt: skip
    assert same.returncode == 0, same.stderr
    judged = json.loads(same.stdout)
    judged = judged.get("verdict", judged)
    assert judged["observed"]["same_prompts"] is True and judged["settle"] is None, judged
    assert any("paired by prompt" in line for line in judged["arithmetic"]), judged
    # ... refused, in one sentence, where the prompts cannot be the same ones
    apart = _cli("diagnose", host, "--observed", "300", "--context", "512", "--text", "code",
                 "--baseline", "400", "--baseline-context", "64", "--passages", "same")  # fmt: skip
    assert apart.returncode == 1 and apart.stderr.count("\n") == 1, apart.stderr
    assert "--passages same needs both figures at the same prompt length" in apart.stderr
    twice = _cli("diagnose", host, "--observed", "300", "--context", "512", "--text", "code",
                 "--baseline", "400", "--baseline-context", "512", "--settle")  # fmt: skip
    assert twice.returncode == 1 and "cannot say what changed" in twice.stderr, twice.stderr
