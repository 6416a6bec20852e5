"""EngineService as a long-lived session on the real engine: one port forward and one
HTTP client for every call, lifecycle events through a subscription (stop included), and
one action at a time (a restart while a sweep runs is refused with what is running)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from console.measure import methods
from console.measure.session import MeasureSession
from console.service import EngineService, LifecycleEvent
from console.service.engine_service import ServiceBusy
from console.transport import open_transport
from tests.console.factories import builtin_profile

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


async def test_session_client_subscription_and_one_action_at_a_time(tmp_path: Path) -> None:
    profile = builtin_profile("session", tmp_path / "s")
    transport = open_transport(profile)
    service = EngineService(profile, transport)
    seen: list[LifecycleEvent] = []
    try:
        async with service.subscribe() as events:

            async def collect() -> None:
                async for event in events:
                    seen.append(event)

            collector = asyncio.create_task(collect())
            assert (await service.start(wait=True, timeout=180)).state == "ready"
            for _ in range(3):
                assert (await service.status()).state == "ready"
            client = await service.client()
            assert client.opened == 1  # one forward + client for the whole session

            session = MeasureSession(service)
            sweep = asyncio.create_task(
                methods.context_sweep(session, contexts=[64, 128], output_tokens=32, repeat=6)
            )
            while service.busy is None:
                await asyncio.sleep(0.01)
            with pytest.raises(ServiceBusy, match="busy: a context-sweep run is running"):
                await service.restart(wait=True)
            with pytest.raises(ServiceBusy):
                await service.stop()
            result = await sweep
            assert result.status == "complete" and service.busy is None

            await service.stop()
            await asyncio.sleep(0.1)
            collector.cancel()
        states = [e.state for e in seen]
        assert states[0] == "starting" and "ready" in states
        assert states[-2:] == ["stopping", "stopped"]
        assert (await service.status()).state == "stopped"
    finally:
        await service.stop(timeout=10)
        await service.close()
        await transport.close()
