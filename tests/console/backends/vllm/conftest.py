"""The real-vLLM tier's one server, shared by every test in a module that reads only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.console.backends.vllm.tier import Tier, require_venv


@pytest.fixture(scope="module")
def vllm_tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    tier = Tier(require_venv(), tmp_path_factory.mktemp("vllm-tier"))
    tier.add_profile()
    try:
        tier.started = tier.start()
        yield tier
    finally:
        tier.stop()
