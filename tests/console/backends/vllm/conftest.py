"""The real-vLLM tier's one server, shared by the tier's modules (a worker runs a file's
tests together, so a second module on the same worker reuses the first one's server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.console.backends.vllm.tier import Tier, require_venv


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    tier = Tier(require_venv(), tmp_path_factory.mktemp("vllm-tier"))
    tier.add_profile()
    try:
        tier.started = tier.start()
        yield tier
    finally:
        tier.stop()


@pytest.fixture(scope="module")
def vllm_tier(vllm_server: Tier) -> Tier:
    """The session's server, ready: started again where an earlier module stopped it."""
    first = vllm_server.started
    started = first is not None and first.returncode == 0
    if started and vllm_server.json("status", vllm_server.name)["state"] != "ready":
        again = vllm_server.start()
        assert again.returncode == 0, again.stderr[-3000:]
    return vllm_server
