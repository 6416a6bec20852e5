"""Shared fixtures (tiny random model pairs written to disk like real checkpoints) and the
rule that splits the suite into two tiers.

The fast tier, `pytest -m "not slow"`, is what a developer runs between changes: tests in
this process (pure code, Textual pilots, snapshots, in-process servers). A test is slow
when it needs a real part outside the test process (an engine server, sshd, tmux,
Chromium, the engines' own parser venvs, vLLM) or trains or benchmarks a model: it is
marked so by the fixtures it uses (`SLOW_FIXTURES`), or by its module's `pytestmark`
where it starts the part itself. CI runs both tiers.
"""

from __future__ import annotations

import os
from pathlib import Path

# Tests measure behaviour, not speed. One torch thread per process keeps a test process and
# the engine subprocesses it starts from fighting over two cores (an OpenMP thread that
# loses its core stalls every parallel op); subprocesses inherit this.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest

# Fixtures that start a real part outside the test process; a test using one is slow.
SLOW_FIXTURES = frozenset(
    {
        "server",  # `specengine serve` on the tiny pair (tests/engine)
        "engine",  # a builtin engine process (live samples)
        "started_engine",  # the bundled engine for a module (tests/console/conftest.py)
        "local_engine",  # `local` started through the console (web, tmux)
        "local_host",  # a builtin engine profile that measurement commands start
        "host",  # the break-even end-to-end host
        "sshd_server",
        "restartable_sshd",
        "gpu_sshd",
        "sshd",
        "tmux",
        "browser",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(slow)


@pytest.fixture(scope="session")
def tiny_pair(tmp_path_factory) -> tuple[Path, Path]:
    """(target_dir, drafter_dir) of a tiny random Qwen3 target and DFlash drafter."""
    pytest.importorskip("torch")
    from engine.tiny import make_random_pair

    return make_random_pair(tmp_path_factory.mktemp("tiny_pair"), seed=0)


# -- one real vLLM server for its whole tier ------------------------------------------------

VLLM_TIER = "tests/console/backends/vllm/"


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadfile`, except that the real-vLLM tier's files are one unit: its server
    (about 3 GB and a minute to start) is shared by the tier's modules, and split over two
    workers each would start its own."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneVllmServer(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return VLLM_TIER if nodeid.startswith(VLLM_TIER) else super()._split_scope(nodeid)

    return OneVllmServer(config, log)


# -- where the suite's time goes: per tier, summed over workers (CI reports the split) ----

_TIER_SECONDS: dict[str, float] = {}


def _tier(report: pytest.TestReport) -> str:
    if report.nodeid.startswith(VLLM_TIER):
        return "vLLM tier"
    return "slow tier" if "slow" in report.keywords else "fast tier"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    tier = _tier(report)
    _TIER_SECONDS[tier] = _TIER_SECONDS.get(tier, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if _TIER_SECONDS and not hasattr(config, "workerinput"):
        parts = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(_TIER_SECONDS.items()))
        terminalreporter.write_line(f"test time by tier (summed over workers): {parts}")
