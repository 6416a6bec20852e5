"""The live charts show a recent window, not the whole session, and t widens it."""

from __future__ import annotations

from console.analysis.records import LiveSample
from console.tui.screens.dashboard import WINDOWS_S, DashboardScreen, chart_series
from console.tui.widgets.chart import Chart
from tests.console.tui import fakes, views


def _session(minutes: int) -> list[LiveSample]:
    return [LiveSample(t=fakes.T0 + 5 * i, source="log", tok_s=100.0 + i % 7, commit_len=3.0,
                       step_time_s=0.03, context_tokens=256)
            for i in range(minutes * 12)]  # fmt: skip


def test_the_charts_span_the_window_not_the_session() -> None:
    samples = _session(30)
    xs = [x for x, _ in chart_series(samples, 120.0)["tok"][0].points]
    assert min(xs) >= -120 and max(xs) == 0
    assert min(x for x, _ in chart_series(samples, None)["tok"][0].points) < -1700


async def test_t_widens_the_window_and_the_chart_follows() -> None:
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(160, 48)) as pilot:
        await views.ready(pilot, service)
        app.ingest_live(samples=_session(30))
        await views.settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen) and screen.window_s == WINDOWS_S[0]
        chart = screen.query_one("#chart-tok", Chart)
        narrow = min(x for s in chart._series for x, _ in s.points)
        await pilot.press("t")
        await views.settle(pilot)
        assert screen.window_s == WINDOWS_S[1]
        assert min(x for s in chart._series for x, _ in s.points) < narrow - 300
        assert "last 10 min" in str(screen.query_one("#live-caption").render())
