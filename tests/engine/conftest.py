"""Fixtures shared by the engine tests."""

from __future__ import annotations

import pytest

from tests.engine.serve._server_harness import ServerProcess


@pytest.fixture(scope="module")
def server(request, tiny_pair):
    """The real `specengine serve` on the tiny random pair, started once per test module
    with the flags that module declares as SERVER_FLAGS (each module tests a different
    configuration: parsers on, an API key and a short context, a tiny context to fuzz)."""
    target, drafter = tiny_pair
    srv = ServerProcess(target, drafter, *request.module.SERVER_FLAGS)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.close()
