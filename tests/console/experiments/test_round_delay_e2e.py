"""The bundled engine's fault flag, through the console's own flag path: every verify
round of a request carries the injected delay, without the flag none, and the relative
slowdown (what `bench verdict` injects) multiplies the round's own compute.

Each request is read against its own rounds: the engine reports each round's compute
(`round_stats`), so the wall step time less that compute is the sleep plus bookkeeping,
whatever speed the host ran at that minute. Comparing two requests' wall times instead
failed CI on a loaded host (a plain 41 ms step against 60 ms with the 40 ms delay)."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.analysis.records import RequestSample
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
    (x,) = slowed.samples
    assert s.commit_len == f.commit_len == x.commit_len  # same tokens, same rounds: greedy
    # a sleep never returns early and an overrun is paid back by the next: the delay is
    # in every round's wall time
    assert outside_compute_s(s) >= 0.95 * DELAY_MS / 1000.0
    assert outside_compute_s(f) < 0.5 * DELAY_MS / 1000.0  # the flag gone, so is the sleep
    # x5 the round's own compute: the sleep is 4x what the same rounds computed
    assert outside_compute_s(x) > 2 * own_compute_s(x)


def own_compute_s(sample: RequestSample) -> float:
    """The mean compute of the request's verify rounds, as the engine timed them."""
    assert sample.rounds and sample.verify_steps == len(sample.rounds)
    return sum(step_s for _, step_s, _ in sample.rounds) / len(sample.rounds)


def outside_compute_s(sample: RequestSample) -> float:
    """Wall step time less the rounds' own compute: injected sleep plus bookkeeping."""
    assert sample.step_time_s is not None
    return sample.step_time_s - own_compute_s(sample)
