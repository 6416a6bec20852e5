"""`specconsole bench tui` runs end to end and reports its figures; it asserts no timing.

The figures depend on the machine and its load, so the targets are printed, not tested
(`--check` turns a missed target into exit 3 for whoever wants that).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from console.tui.bench import TuiBenchResult


@pytest.mark.slow  # runs the TUI benchmark itself (about 7 s)
def test_bench_tui_json_has_every_figure() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "console.cli", "bench", "tui", "--json"]
        + ["--idle-seconds", "0.5", "--points", "120"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["points"] == 120 and result["redraws"] == 40
    assert 0 < result["first_frame_s"] < 60
    assert 0 < result["redraw_ms_median"] <= result["redraw_ms_p95"]
    assert result["idle_cpu_pct"] >= 0 and result["idle_cpu_pct_still"] >= 0
    width, height = result["chart_size"]
    assert width > 20 and height > 5  # the dashboard's chart, not a zero-size widget
    assert set(result["checks"]) == {"first_frame_s", "redraw_ms", "idle_cpu_pct"}


def test_table_marks_missed_targets() -> None:
    result = TuiBenchResult(
        first_frame_s=0.4,
        redraw_ms_median=20.0,
        redraw_ms_p95=30.0,
        idle_cpu_pct=1.0,
        idle_cpu_pct_still=0.5,
        points=600,
        redraws=40,
        chart_size=(51, 12),
        idle_seconds=5.0,
    )
    assert result.checks == {"first_frame_s": True, "redraw_ms": False, "idle_cpu_pct": True}
    assert not result.ok
    lines = result.table().splitlines()
    assert "MISSED" in lines[2] and "ok" in lines[1] and "ok" in lines[3]
