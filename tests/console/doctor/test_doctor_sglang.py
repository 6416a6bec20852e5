"""`doctor` on an SGLang host, in SGLang's recorded formats (its help text, its log
lines rendered from its own format strings, its /metrics page): a host started without
`--enable-metrics` is told the flag to add, and the `set` doctor names serves /metrics
after the restart; the counters and a live log line are read as `watch` reads them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from console.config import HostProfile, LaunchProfile, save_profile
from console.doctor import run_doctor
from console.doctor.findings import Findings
from console.doctor.readings import reading_checks
from console.service.engine_client import parse_metrics
from tests.console.backends.sglang.test_logparse import sglang_mixin_line
from tests.console.conftest import engine_service
from tests.console.factories import run_cli
from tests.ports import free_port

pytestmark = pytest.mark.timeout(240)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
METRICS = FIXTURES / "spec_fields" / "sglang_metrics_after.txt"
STAND_IN = Path(__file__).with_name("recorded_sglang.py")


def _profile(tmp_path: Path, metrics: Path) -> HostProfile:
    log = tmp_path / "log.txt"
    log.write_text(sglang_mixin_line() + "\n")  # SGLang 0.5's `Decode batch` line
    launch = LaunchProfile(
        command=[sys.executable, str(STAND_IN)],
        env={"RECORDED_SGLANG_LOG": str(log), "RECORDED_SGLANG_METRICS": str(metrics)},
    )
    return HostProfile(
        name="sgl", engine="sglang", launch=launch, port=free_port(), model_path="/models/m",
        flags={"speculative-algorithm": "EAGLE3"}, state_dir=str(tmp_path / "state"),
    )  # fmt: skip


async def test_sglang_without_enable_metrics_gets_the_flag_to_add(tmp_path: Path) -> None:
    profile = _profile(tmp_path, METRICS)
    save_profile(profile)  # for the CLI's `set` below
    async with engine_service(profile, start=True) as service:
        report = await run_doctor(service)
        metrics = report.by_name("metrics")
        assert metrics.status == "fail"
        assert "--enable-metrics" in metrics.detail
        assert (
            metrics.fix == "`specconsole set sgl enable-metrics=true` adds it (the engine restarts)"
        )
        assert report.failed
        # What else doctor reads from this host, in SGLang's formats:
        assert report.by_name("engine").detail == "sglang 0.5.23"  # /get_server_info
        assert report.by_name("flag-schema").status == "warn"  # help text, no parser here
        assert "help text" in report.by_name("flag-schema").detail
        log = report.by_name("log-format")
        assert log.status == "ok" and "DecodeBatchLine" in log.detail
        assert "512.3 tok/s, commit 6.53, ctx 1234" in log.detail
        spec = report.by_name("speculation")  # EAGLE3 with no drafter named
        assert spec.status == "warn" and "--speculative-draft-model-path" in spec.detail
        assert report.by_name("spec-counters").status == "skip"
        assert (
            report.by_name("port").status == "ok" and "our engine" in report.by_name("port").detail
        )

        # The fix as doctor words it, through the CLI: the engine restarts with the flag.
        done = run_cli("set", "sgl", "enable-metrics=true", "--yes")
        assert done.returncode == 0, done.stderr
        after = await run_doctor(service)
    assert after.by_name("metrics").status == "ok"
    assert "sglang's own" in after.by_name("metrics").detail
    counters = after.by_name("spec-counters")
    assert counters.status == "ok" and "sglang:spec_verify_calls_total" in counters.detail


async def test_an_older_sglang_page_has_only_the_gauge(tmp_path: Path) -> None:
    """SGLang before `spec_verify_calls_total`: the counter is missing, the gauge read."""
    text = "".join(
        line for line in METRICS.read_text().splitlines(keepends=True)
        if "spec_verify_calls" not in line
    )  # fmt: skip
    profile = _profile(tmp_path, METRICS).model_copy(
        update={"flags": {"speculative-algorithm": "NGRAM", "enable-metrics": True}}
    )
    from console.service import EngineService

    async with EngineService.open(profile) as service:
        found = Findings(service, scrape=parse_metrics(text))
        counters = (await reading_checks(found))[1]
    assert counters.status == "warn"
    assert counters.detail.startswith("missing sglang:spec_verify_calls_total: ")
    assert "sglang:spec_accept_length gauge" in counters.detail and counters.fix
