"""The dashboard: the "now" readout, charts that do not mislead (idle gaps, one series
and mark per source, warm-up left out), GPU telemetry beside step time only where the
host has GPUs, redraws only on new data, and the layout at 80x24, 100x30 and 160x48."""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import replace

import pytest
from textual.pilot import Pilot

from console.analysis.gpu_sample import GpuSample
from console.analysis.records import LiveSample
from console.measure.live import WARMUP_NOTE
from console.measure.live_samples import WALL_CLOCK_NOTE
from console.tui.app import SpecConsoleApp
from console.tui.screens import dashboard
from console.tui.screens.dashboard import (
    DashboardScreen,
    chart_series,
    gpu_series,
    gpu_text,
    now_figures,
    now_lines,
)
from console.tui.settings import TuiSettings
from console.tui.widgets.chart import Chart
from console.tui.widgets.plotext_render import POINT_MARKER, ChartSeries, render_lines, segments
from tests.console.tui import fakes

NOW = fakes.T0 + 125.0  # 7 s after the last of fakes.live_samples()


def _app(service: fakes.FakeService) -> SpecConsoleApp:
    return SpecConsoleApp(
        "gpu1", settings=TuiSettings(theme="dark"), service=service, poll=False, live=False
    )


def _gpus(n: int = 30) -> list[GpuSample]:
    return [
        GpuSample(0, utilization_pct=60 + i % 30, memory_used_mib=40_000 + 100 * i,
                  memory_total_mib=81_920, power_w=250 + i, sm_clock_mhz=1980, t=fakes.T0 + 4 * i)
        for i in range(n)
    ]  # fmt: skip


# -- the series -----------------------------------------------------------------------


def test_idle_gap_is_not_joined() -> None:
    # Two bursts of log lines ten minutes apart: two runs, not one line across the idle.
    burst = [LiveSample(t=fakes.T0 + i, source="log", tok_s=100.0) for i in range(5)]
    later = [LiveSample(t=fakes.T0 + 600 + i, source="log", tok_s=50.0) for i in range(5)]
    (series,) = chart_series(burst + later)["tok"]
    assert [len(part) for part in segments(series.points, series.gap)] == [5, 5]
    text = render_lines([series], 60, 10).plain
    plot_rows = text.splitlines()[1:-3]
    # Somewhere between the bursts every row of the plot area is blank.
    inner = [row[10:-2] for row in plot_rows]
    blank_columns = [c for c in range(len(inner[0])) if all(r[c] == " " for r in inner)]
    assert len(blank_columns) > 30


def test_sources_are_separate_series_and_requests_are_points() -> None:
    samples = [
        LiveSample(t=fakes.T0, source="log", tok_s=100.0, commit_len=3.0),
        LiveSample(t=fakes.T0 + 1, source="metrics", tok_s=98.0, commit_len=3.1),
        LiveSample(t=fakes.T0 + 2, source="request", tok_s=95.0, commit_len=2.9),
    ]
    tok = chart_series(samples)["tok"]
    assert [s.label for s in tok] == ["engine log line", "/metrics delta", "measured request"]
    request = tok[2]
    assert request.markers and not request.lines
    assert len({s.slot for s in tok}) == 3  # one colour each, the same in every chart
    caption = dashboard.live_caption(samples).plain
    assert "log line" in caption and "request" in caption and "gap: idle" in caption
    # In the room it has (78 cells inside the panel at 80 columns): the longest wording
    # that fits, whole; the window's key hint goes first (the footer names it too).
    for width in (78, 68):
        narrow = dashboard.live_caption(samples, width=width).plain
        assert len(narrow) <= width and narrow.endswith("gap: idle"), (width, narrow)
        assert "log line" in narrow and "request" in narrow and "last 2 min" in narrow
    assert "(t widens)" in dashboard.live_caption(samples, width=160).plain


def test_warmup_samples_are_not_traffic() -> None:
    real = LiveSample(t=fakes.T0, source="log", tok_s=100.0)
    warm = LiveSample(t=fakes.T0 + 1, source="request", tok_s=5.0, note=WARMUP_NOTE)
    assert [p for s in chart_series([real, warm])["tok"] for p in s.points] == [(0.0, 100.0)]
    now = now_figures([real, warm])
    assert now is not None and now.tok_s == 100.0


def test_a_wall_clock_average_never_hides_a_decode_rate_of_the_same_minute() -> None:
    # vLLM: a /metrics window's decode rate, then its log line's wall-clock average over
    # an interval mostly idle
    rate = LiveSample(t=fakes.T0, source="metrics", tok_s=670.0, commit_len=3.2)
    wall = LiveSample(t=fakes.T0 + 8, source="log", tok_s=16.0, note=WALL_CLOCK_NOTE)
    now = now_figures([rate, wall])
    assert now is not None and now.tok_s == 670.0 and now.t == fakes.T0
    # with no decode rate that recent, the average is shown, named as what it is
    late = LiveSample(t=fakes.T0 + 300, source="log", tok_s=16.0, note=WALL_CLOCK_NOTE)
    now = now_figures([rate, wall, late])
    assert now is not None and now.tok_s == 16.0 and "wall-clock avg" in now.source
    assert "wall-clock avg" in now_lines(now, late.t)[1].plain


def test_now_readout_figures_age_and_stale() -> None:
    samples = fakes.live_samples()
    now = now_figures(samples)
    assert now is not None
    big, text = now_lines(now, now.t + 3)
    assert big == f"{samples[-1].tok_s:.1f}"
    assert "<10 s ago" in text.plain and "STALE" not in text.plain
    assert "40 s ago" in now_lines(now, now.t + 47)[1].plain
    assert f"ctx {samples[-1].context_tokens}" in text.plain
    assert f"commit {samples[-1].commit_len:.2f}" in text.plain and "step 31.8ms" in text.plain
    _, text = now_lines(now, now.t + 240)
    assert "STALE, 4 min ago" in text.plain
    big, text = now_lines(None, now.t)
    assert big == "-" and "no decode yet" in text.plain


def test_under_a_batch_the_readout_says_its_tok_s_is_the_streams_sum() -> None:
    # four streams of 1200 tok/s each: commit 13.5 per stream and round in 11.25 ms rounds
    batched = LiveSample(t=fakes.T0, source="metrics", tok_s=4800.0, commit_len=13.5,
                         step_time_s=0.01125, context_tokens=700, running=4, batch=4.0)  # fmt: skip
    assert batched.per_stream_tok_s == pytest.approx(1200.0)
    big, text = now_lines(now_figures([batched]), fakes.T0 + 1)
    assert big == "4800.0" and text.plain.splitlines()[0].startswith("tok/s batch 4.0")
    assert len(text.plain.splitlines()) == 3  # the readout's three rows, at every size
    alone = replace(batched, tok_s=1200.0, running=1, batch=1.0)
    _, text = now_lines(now_figures([alone]), fakes.T0 + 1)
    assert "batch" not in text.plain


def test_sweep_points_draw_markers_and_spread_bars() -> None:
    series = ChartSeries("code", [(64, 100.0), (512, 80.0), (1024, 50.0)], markers=True,
                         spread=[(90, 110), (70, 85), (45, 52)])  # fmt: skip
    text = render_lines([series], 50, 12).plain
    assert text.count(POINT_MARKER) == 3
    # The axis reaches the top of the spread, not just the median, with round ticks on
    # evenly spaced rows.
    ticks = [(row, int(m.group(1))) for row, line in enumerate(text.splitlines())
             if (m := re.match(r"^\s*(\d+)┤", line))]  # fmt: skip
    assert max(v for _, v in ticks) >= 110, text
    rows = [r for r, _ in ticks]
    values = [v for _, v in ticks]
    assert len({b - a for a, b in itertools.pairwise(rows)}) == 1, text
    assert len({a - b for a, b in itertools.pairwise(values)}) == 1 and all(
        v % 10 == 0 for v in values
    )


def test_gpu_series_and_text() -> None:
    gpus = _gpus(5)
    labels = [s.label for s in gpu_series(gpus)]
    assert labels == ["util %", "mem %"]
    line = gpu_text(gpus)
    assert line.startswith("GPU0 64%") and "W" in line and "MHz" in line
    assert gpu_series([]) == [] and gpu_text([]) == ""


# -- the screen -----------------------------------------------------------------------


class FakeTelemetry:
    """GpuTelemetry's interface, without nvidia-smi."""

    def __init__(self, samples: list[GpuSample] | None) -> None:
        self.samples = samples
        self.reason = None if samples else "nvidia-smi is not installed on gpu1"

    async def available(self) -> bool:
        return bool(self.samples)

    async def sample(self) -> list[GpuSample]:
        return list(self.samples or [])


@pytest.mark.parametrize("has_gpu", [True, False])
async def test_gpu_chart_only_with_gpus(has_gpu: bool, monkeypatch) -> None:
    monkeypatch.setattr(dashboard, "wall_clock", lambda: NOW)
    service = fakes.FakeService()
    app = _app(service)
    async with app.run_test(size=(160, 48)) as pilot:
        app.status = await service.status()
        app.ingest_live(fakes.live_samples())
        app.live.gpu_telemetry = FakeTelemetry(_gpus(3) if has_gpu else None)  # type: ignore[assignment]
        app.run_worker(app.live._run_gpu(), group="gpu", exit_on_error=False)
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        gpu_chart = screen.query_one("#chart-gpu", Chart)
        assert gpu_chart.display is has_gpu
        if has_gpu:
            assert app.gpu_samples and gpu_chart.chart_title.startswith("GPU0")
        else:
            assert app.gpu_samples == [] and app.live.gpu_reason
        app.workers.cancel_group(app, "gpu")


async def test_charts_draw_only_when_a_sample_arrives(monkeypatch) -> None:
    monkeypatch.setattr(dashboard, "wall_clock", lambda: NOW)
    service = fakes.FakeService()
    app = _app(service)
    async with app.run_test(size=(160, 48)) as pilot:
        app.status = await service.status()
        app.ingest_live(fakes.live_samples())
        await pilot.pause(0.6)
        chart = app.screen.query_one("#chart-tok", Chart)
        drawn = chart.draws
        assert drawn >= 1
        await asyncio.sleep(2.5)  # idle: the age ticks, the charts do not redraw
        await pilot.pause()
        assert chart.draws == drawn
        app.ingest_live(requests=fakes.requests())  # a request row, no new sample
        await pilot.pause(0.6)
        assert chart.draws == drawn
        last = fakes.live_samples()[-1]
        app.ingest_live([LiveSample(t=last.t + 2, source="log", tok_s=90.0)])
        # drawn at the charts' own rate (a few seconds on a two-minute span), then once
        for _ in range(160):
            if chart.draws > drawn:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        assert chart.draws == drawn + 1


async def test_an_unchanged_status_poll_repaints_nothing_and_idle_has_no_animation() -> None:
    """A status poll every two seconds finds the same state most of the time: the state
    words are not given again (an update lays out the whole screen), and the status
    bar's busy indicator animates only while an action runs (16 repaints a second)."""
    from textual.widgets import LoadingIndicator, Static

    service = fakes.FakeService()
    app = _app(service)
    async with app.run_test(size=(160, 48)) as pilot:
        app.status = await service.status()
        await pilot.pause(0.3)
        updates: list[str] = []
        for selector in ("#state-line", "#state-hint", "#status-text"):
            widget = app.screen.query_one(selector, Static)
            original = widget.update
            widget.update = lambda *a, _o=original, _s=selector, **k: (
                updates.append(_s),
                _o(*a, **k),
            )  # type: ignore[method-assign]
        for _ in range(3):
            app.status = await service.status()  # an equal status, as a poll reads it
            await pilot.pause()
        assert updates == []
        indicator = app.screen.query_one(LoadingIndicator)
        assert indicator.auto_refresh is None
        app.running = "restart"
        await pilot.pause()
        assert indicator.auto_refresh
        app.running = ""
        await pilot.pause()
        assert indicator.auto_refresh is None


# -- snapshots at the three sizes ------------------------------------------------------


def _ready(service: fakes.FakeService, gpus: bool = False):
    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        app.status = await service.status()
        app.server_info = await service.server_info()
        samples = fakes.live_samples()
        # An idle gap, and measured requests as points among the log lines.
        samples = [s for s in samples if not 20 <= (s.t - fakes.T0) / 2 < 35]
        extra = LiveSample(t=fakes.T0 + 60, source="request", tok_s=120.0, commit_len=3.4,
                           step_time_s=0.028, context_tokens=700)  # fmt: skip
        samples = sorted([*samples, extra], key=lambda s: s.t)
        if gpus:
            app.live.gpu_samples = _gpus()  # arrives with the samples: one draw
        # One delivery, as the live feed batches them: the charts draw it at once.
        app.ingest_live(samples, fakes.requests())
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause(0.6)

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_sizes(snap_compare, monkeypatch, size) -> None:
    pytest.importorskip("pytest_textual_snapshot")
    monkeypatch.setattr(dashboard, "wall_clock", lambda: NOW)
    service = fakes.FakeService()
    assert snap_compare(_app(service), terminal_size=size, run_before=_ready(service))


def test_dashboard_with_gpus(snap_compare, monkeypatch) -> None:
    pytest.importorskip("pytest_textual_snapshot")
    monkeypatch.setattr(dashboard, "wall_clock", lambda: NOW)
    service = fakes.FakeService()
    assert snap_compare(_app(service), terminal_size=(160, 48), run_before=_ready(service, True))


def test_dashboard_stopped_at_80x24(snap_compare, monkeypatch) -> None:
    pytest.importorskip("pytest_textual_snapshot")
    monkeypatch.setattr(dashboard, "wall_clock", lambda: NOW)
    service = fakes.FakeService(fakes.status("stopped"))
    assert snap_compare(_app(service), terminal_size=(80, 24), run_before=_ready(service))


def test_axis_labels_are_plain_numbers_with_si_suffixes() -> None:
    from console.tui.widgets.axis_ticks import label, y_axis

    low, upper, ticks = y_axis(960.0, 1210.0, 9)
    labels = [label(t, ticks[1] - ticks[0]) for t in ticks]
    assert not any("e" in x for x in labels), labels  # never 1.2e3
    assert any(x.endswith("k") for x in labels) and low <= 960 and upper >= 1210
    assert label(1250.0, 250.0) == "1.25k" and label(512.0, 128.0) == "512"
    assert label(0.5, 0.25) == "0.5" and label(0.75, 0.25) == "0.75"


def test_x_ticks_are_whole_numbers_even_on_a_sub_second_window() -> None:
    from console.tui.widgets.axis_ticks import label, tick_step, x_ticks

    ticks = x_ticks(0.0, 0.8, 60)  # the live window's first second
    step = tick_step(ticks)
    assert [label(t, step) for t in ticks] == ["0"], ticks
    wide = x_ticks(64.0, 1900.0, 60)
    assert all(t == int(t) for t in wide) and len(wide) >= 3
    assert x_ticks(0.6, 0.9, 60) == [1.0]  # no whole number inside: the nearest one


def test_a_legend_too_long_for_the_chart_ends_in_an_ellipsis() -> None:
    names = [f"a series with a rather long name {i}" for i in range(3)]
    series = [ChartSeries(n, [(0, 1.0 + i), (10, 2.0 + i)]) for i, n in enumerate(names)]
    text = render_lines(series, 50, 10)
    last = text.plain.split("\n")[-1]
    assert len(last) <= 50 and last.endswith("…"), last
    wide = render_lines(series, 200, 10).plain.split("\n")[-1]
    assert wide.endswith(names[-1])  # room enough: whole
