"""The prompt lab's per-round curve, the sweeps view's stored break-even runs and sweep
points drawn as points with spread, and the flags view following every change of the
launch config (rollback, a CLI `set`) with the engine's effective values and their source."""

from __future__ import annotations

import asyncio
import dataclasses

from textual.widgets import DataTable, Static

from console.analysis.records import RequestSample, RunInfo
from console.analysis.round_curve import sample_curve
from console.analysis.stats import summarize
from console.experiments.breakeven import METHOD, breakeven_rows
from console.service.launch import LaunchConfig
from console.store import RunStore
from console.tui.app import SpecConsoleApp
from console.tui.screens.prompt_lab import curve_series
from console.tui.screens.sweeps import point_series
from console.tui.settings import TuiSettings
from console.tui.widgets.chart import Chart
from tests.console.experiments.test_breakeven import AR, SPEC, _samples
from tests.console.tui import fakes


def _app(service) -> SpecConsoleApp:
    return SpecConsoleApp(
        "gpu1", settings=TuiSettings(theme="dark"), service=service, poll=False, live=False
    )


def _long_request(loop_from: int = 300) -> RequestSample:
    """One long generation: commit decays with context, step time grows, and the output
    falls into a loop (the same 16 tokens over and over) from `loop_from` tokens on."""
    rounds, ids, context = [], [], 500
    while len(ids) < 600:
        commit = 4 if len(ids) < 200 else 2
        rounds.append([context, 0.010 + context * 1e-5, commit])
        for _ in range(commit):
            ids.append(len(ids) % 16 + 1000 if len(ids) >= loop_from else len(ids))
        context += commit
    base = fakes.requests()[0]
    return dataclasses.replace(base, rounds=rounds, output_ids=ids, completion_tokens=len(ids),
                               context_tokens=500)  # fmt: skip


def test_curve_series_marks_looping_windows() -> None:
    curve = sample_curve(_long_request())
    assert curve is not None and curve.looping_from is not None
    lines = curve_series(curve)
    labels = [s.label for s in lines["commit"]]
    assert labels[1].startswith("rolling") and labels[-1] == "looping output"
    looping = lines["step"][-1]
    assert looping.markers and not looping.lines
    assert all(x >= curve.looping_from for x, _ in looping.points)
    first, last = lines["commit"][0].points[0], lines["commit"][0].points[-1]
    assert first[0] < last[0]  # against context


async def test_prompt_lab_draws_the_curve_of_the_last_request() -> None:
    from console.measure.methods import MethodResult
    from console.tui.messages import PromptRan

    service = fakes.FakeService()
    app = _app(service)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        row = screen.query_one("#lab-curve")
        assert not row.display or not row.has_class("-shown")
        result = MethodResult(method="probe", run_id=7, samples=[_long_request()], points=[])
        screen.post_message(PromptRan(result))
        await pilot.pause(0.6)
        assert row.has_class("-shown") and row.display
        commit = screen.query_one("#lab-curve-commit", Chart)
        assert any(s.label == "looping output" for s in commit._series)
        summary = str(screen.query_one("#lab-curve-summary", Static).render())
        assert "per-round curve" in summary and "LOOPING from context" in summary, summary


def test_sweep_points_are_markers_with_spread() -> None:
    points = summarize(fakes.sweep_samples())
    (code, _prose) = point_series(points, lambda p: p.context, lambda p: p.step_s, 1000.0)
    assert code.markers and code.spread is not None and len(code.spread) == len(code.points)
    assert all(lo <= y <= hi for (_, y), (lo, hi) in zip(code.points, code.spread, strict=True))
    assert code.points[0][1] > 10  # scaled to ms


async def test_sweeps_view_lists_stored_breakeven_runs() -> None:
    store = RunStore.default()
    info = RunInfo(host="gpu1", engine="builtin", method=METHOD, params={}, flags={"a": 1},
                   started_at=fakes.T0)  # fmt: skip
    run_id = await store.start_run(info)
    rows = breakeven_rows(_samples(), spec_hash=SPEC, ar_hash=AR)
    await store.finish_run(run_id, "complete", {"rows": [r.as_dict() for r in rows]})
    store.close()

    service = fakes.FakeService()
    app = _app(service)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("w")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        panel = app.screen.query_one("#breakeven-panel")
        assert app.screen.has_class("-breakeven") and panel.display
        text = str(app.screen.query_one("#breakeven-text", Static).render())
        assert f"run {run_id}" in text and "commit needed" in text and "1900" in text
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert not panel.display
        line = app.screen.query_one("#breakeven-line", Static)
        # Each context's speedup with its interval and the experiment's own verdict.
        shown = str(line.render())
        assert line.display and all(f"ctx {r.context} x{r.speedup.value:.2f} [" in shown
                                    for r in rows), shown  # fmt: skip
        assert shown.count("does not pay") == sum(not r.pays for r in rows), shown


def _config(window: int) -> LaunchConfig:
    flags = {**fakes.FLAGS, "speculative-draft-window-size": window}
    argv = [*fakes.CONFIG.argv[:-3], str(window), *fakes.CONFIG.argv[-2:]]
    return dataclasses.replace(fakes.CONFIG, flags=flags, argv=argv)


class ChangingService(fakes.FakeService):
    """A fake whose launch config changes as a rollback or a `specconsole set` would."""

    def __init__(self) -> None:
        super().__init__()
        self.config = fakes.CONFIG

    async def current_config(self) -> LaunchConfig:
        return self.config


def _values(app) -> dict[str, tuple[str, str]]:
    # Keyed by the row key (the flag's full name): a narrow name column ends in "…".
    table = app.screen.query_one("#flag-table", DataTable)
    return {
        str(key.value): (str(table.get_row(key)[1]), str(table.get_row(key)[2]))
        for key in table.rows
    }


async def test_flags_view_follows_rollback_and_cli_set_with_effective_values() -> None:
    service = ChangingService()
    app = _app(service)
    async with app.run_test(size=(160, 48)) as pilot:
        app.status = await service.status()
        app.server_info = await service.server_info()
        await pilot.press("f")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        values = _values(app)
        # Effective values the engine chose itself, with their source, not "-".
        assert values["speculative-num-draft-tokens"] == ("16", "engine")
        assert values["speculative-ddtree-budget"] == ("15", "engine")
        assert values["context-length"] == ("2048", "engine")

        # A rollback run from this console: the action ends, the view reads again.
        service.config = _config(512)
        app.running = "rollback"
        await pilot.pause()
        app.running = ""
        await pilot.pause(0.3)
        await app.workers.wait_for_complete()
        await pilot.pause()
        window = _values(app)["speculative-draft-window-size"]
        assert window[0].startswith("512"), window

        # A `specconsole set` from another shell: the polled status names a new config.
        service.config = _config(256)
        app.status = fakes.status(config=service.config)
        await pilot.pause(0.3)
        await app.workers.wait_for_complete()
        await pilot.pause()
        window = _values(app)["speculative-draft-window-size"]
        assert window[0].startswith("256") and window[1] == "launch config", window
        await asyncio.sleep(0)
