"""The sweeps view's load method, as `specconsole load` runs it: from the palette it asks
for a load run with the form's first context, output and text and its repeat as waves;
the answer's table (the experiment's own lines) fills the break-even panel, and a noise
target (load repeats a fixed count) is refused in one sentence. Pilot, fake service."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from console.analysis.load_format import table_lines
from console.experiments.load import LoadResult
from console.tui.app import SpecConsoleApp
from console.tui.messages import LoadRan, Request
from console.tui.screens.dashboard import DashboardScreen
from console.tui.screens.sweeps import SweepsScreen
from console.tui.screens.sweeps_load import load_params
from console.tui.widgets.chart import Chart
from tests.console.analysis.test_load_table import _run
from tests.console.tui import fakes
from tests.console.tui.pilot import until


async def _until(pilot, what: str, check: Callable[[], bool]) -> None:
    await until(pilot, what, check, 5.0, step=0.05)


def test_the_form_gives_one_point_and_waves() -> None:
    assert load_params("256,1k", "32,64", "prose,code", "2") == {
        "concurrency": [1, 2, 4, 8], "context": 256, "output_tokens": 32,
        "text_type": "prose", "waves": 2,
    }  # fmt: skip
    assert load_params("", "", "", "")["waves"] == 3
    with pytest.raises(Exception, match="fixed count"):
        load_params("256", "32", "code", "", target="5%")


@pytest.mark.parametrize("size", [(80, 24), (130, 42)])
async def test_load_from_the_palette_runs_and_shows_its_table(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Request] = []
    monkeypatch.setattr(SweepsScreen, "request", lambda self, message: asked.append(message))
    app = SpecConsoleApp("gpu1", service=fakes.FakeService(), poll=False, live=False)
    async with app.run_test(size=size) as pilot:
        app.status = fakes.status()
        await _until(pilot, "dashboard", lambda: isinstance(app.screen, DashboardScreen))
        await pilot.press("w")
        await _until(pilot, "sweeps", lambda: isinstance(app.screen, SweepsScreen))
        screen = app.screen
        for field, value in (("contexts", "256"), ("outputs", "32"), ("repeat", "2")):
            screen.query_one(f"#sweep-{field}").value = value
        await pilot.press("colon", *"Speculation under load")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await _until(pilot, "the load asked", lambda: bool(asked))
        params = asked[0].params  # type: ignore[attr-defined]
        assert type(asked[0]).__name__ == "RunLoad"
        assert (params["context"], params["output_tokens"], params["waves"]) == (256, 32, 2)

        from console.analysis.load_table import load_table

        table = load_table(_run(levels=(1, 8)), spec_hash="spec", ar_hash="ar")
        result = LoadResult(7, params, {}, {"speculative-algorithm": "NONE"}, table=table)
        screen.post_message(LoadRan(result))
        await _until(pilot, "the table", lambda: "tok/s per stream" in str(
            screen.query_one("#breakeven-text").render()))  # fmt: skip
        shown = str(screen.query_one("#breakeven-text").render())
        assert table_lines(table)[1].split()[:3] == shown.splitlines()[1].split()[:3]
        line = str(screen.query_one("#breakeven-line").render())
        assert line.startswith("load run 7: speculation stops paying at concurrency")
        assert screen.has_class("-breakeven")
        # the charts: per-stream tok/s, step and commit against concurrency, one line per
        # arm, each level's interval as its bar
        tok = screen.query_one("#sweep-tok", Chart)
        assert tok.x_label.startswith("concurrency")
        by_arm = {s.label: s for s in tok._series}
        assert set(by_arm) == {"speculation", "speculation off"}
        spec = by_arm["speculation"]
        assert [x for x, _ in spec.points] == [1.0, 8.0]
        assert [y for _, y in spec.points] == [r.spec.stream_tok_s.value for r in table.rows]
        assert spec.spread[0] == (table.rows[0].spec.stream_tok_s.low,
                                  table.rows[0].spec.stream_tok_s.high)  # fmt: skip
        step = {s.label: s for s in screen.query_one("#sweep-step", Chart)._series}
        assert step["speculation off"].points[1][1] == pytest.approx(
            table.rows[1].ar.step_s.value * 1000)  # fmt: skip
        commit = {s.label for s in screen.query_one("#sweep-commit", Chart)._series}
        assert "speculation" in commit
