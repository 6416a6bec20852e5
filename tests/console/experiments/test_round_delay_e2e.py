"""The bundled engine's fault flag, through the console's own flag path: every verify
round of a request carries the injected delay (a sleep never returns early, so the
bound below holds on any host, however loaded), and without it rounds are far shorter;
the relative slowdown (what `bench verdict` injects) multiplies the round's own time."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.measure import methods
from console.measure.session import MeasureSession
from tests.console.conftest import engine_service
from tests.console.factories import builtin_profile

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.asyncio]

DELAY_MS = 40.0


async def test_debug_round_delay_lands_in_every_rounds_step_time(tmp_path: Path) -> None:
    profile = builtin_profile("delay-local", tmp_path / "state")
    async with engine_service(profile, start=True) as service:
        schema = await service.schema()
        assert "debug-round-delay-ms" in schema.schema.flags  # read from the engine's parser
        applied = await service.apply(await service.plan({"debug-round-delay-ms": "40"}),
                                      timeout=180)  # fmt: skip
        assert applied.ok, applied.event.describe()
        slow = await methods.probe(MeasureSession(service), context=64, max_tokens=24)
        applied = await service.apply(await service.plan({"debug-round-delay-ms": None}),
                                      timeout=180)  # fmt: skip
        assert applied.ok
        fast = await methods.probe(MeasureSession(service), context=64, max_tokens=24)
        assert "debug-round-slowdown" in schema.schema.flags
        applied = await service.apply(await service.plan({"debug-round-slowdown": "4"}),
                                      timeout=180)  # fmt: skip
        assert applied.ok, applied.event.describe()
        slowed = await methods.probe(MeasureSession(service), context=64, max_tokens=24)
    (s,) = slow.samples
    (f,) = fast.samples
    assert s.verify_steps and s.step_time_s is not None and f.step_time_s is not None
    assert s.step_time_s >= DELAY_MS / 1000.0  # the sleep is inside every round's time
    assert f.step_time_s < s.step_time_s - 0.5 * DELAY_MS / 1000.0
    assert s.commit_len == f.commit_len  # the same tokens in the same rounds: greedy, exact
    (x,) = slowed.samples
    # x5 the round's own compute: over twice the plain step even if a slow spell of the
    # host (up to ~45% here) hit the plain probe alone
    assert x.step_time_s is not None and x.step_time_s > 2 * f.step_time_s
    assert x.commit_len == f.commit_len
