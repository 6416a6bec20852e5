"""The prompt lab keeps a run's figures in view (pilot, fixed data): after a run with
repeats, its pooled row, the 95% interval under it and its raw rows are on screen
without scrolling at 80x24, at 88x33 (what `specconsole web` gets in an 800x600
browser window), 100x30 and 160x48; a longer run shows its pooled figures, interval
and newest row, and nothing pushes the footer off the screen.

Before, the results took a fixed share: at 100x30 only the pooled rows showed and every
raw row was below the table's edge; at 88x33 one of three.
"""

from __future__ import annotations

import pytest

from console.analysis.stats import summarize
from console.measure.methods import MethodResult
from console.tui.messages import PromptRan
from tests.console.tui import views

SIZES = ((80, 24), (88, 33), (100, 30), (160, 48))


def _lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def _results(lines: list[str]) -> list[str]:
    """The lines drawn inside the results panel's border."""
    top = next(i for i, line in enumerate(lines) if "─ results ─" in line)
    bottom = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("╰"))
    return lines[top + 1 : bottom]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_a_repeated_run_is_in_view_whole(size: tuple[int, int]) -> None:
    app, run_before = views.scenario("prompt")  # a run of 3 repeats (views.prompt_result)
    async with app.run_test(size=size) as pilot:
        await run_before(pilot)
        lines = _lines(app)
        shown = _results(lines)
        pooled = [line for line in shown if " n=3 " in line]
        assert len(pooled) == 1 and "138.2" in pooled[0] and "26.26" in pooled[0], shown
        assert not pooled[0].split("│")[1].lstrip().startswith("…"), pooled  # label whole
        ci = [line for line in shown if "95% CI" in line]
        assert len(ci) == 1 and "135.4–141.0" in ci[0] and "25.74–26.79" in ci[0], shown
        raw = [line for line in shown if "128/128" in line]
        assert len(raw) == 3, f"{len(raw)} of 3 raw rows in view at {size}:\n" + "\n".join(lines)
        assert "q Quit" in lines[-1], lines[-1]  # nothing pushed the footer off

        # A longer run on top: its pooled figures, interval and newest request in view.
        r = views.prompt_result()
        samples = [r.samples[i % 3] for i in range(8)]
        app.screen.post_message(PromptRan(MethodResult("prompt", 8, samples, summarize(samples))))
        await views.settle(pilot)
        lines = _lines(app)
        shown = _results(lines)
        assert " n=8 " in shown[1] and "95% CI" in shown[2], shown  # under the header
        assert "136.4–139.6" in shown[2] and "128/128" in shown[3], shown
        assert "q Quit" in lines[-1], lines[-1]
