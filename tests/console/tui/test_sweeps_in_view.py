"""The sweeps view keeps a sweep's figures in view (pilot, fixed data): after a sweep of
eight points (contexts 64,256,512,1024 x code,prose), every point row and the model's
summary (or the verdict's headline) are on screen without scrolling at 80x24, at 88x33
(`specconsole web` in an 800x600 browser window) and at 100x30; a newer sweep's rows
replace them in view.

Below 40 rows the form folds into one line once points are shown (sweeps_fold.py):
Enter on that line unfolds it into the form, Escape folds it again; at 40 rows and more
it never folds. Before, the form stayed open and at 80x24 five of the eight points were
in view, the rest below the table's edge.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input

from console.analysis.decompose import fit
from console.analysis.stats import summarize
from console.measure.methods import MethodResult
from console.tui.messages import SweepRan
from tests.console.tui import views

SIZES = ((80, 24), (88, 33), (100, 30))


def _lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def _panel(lines: list[str], title: str) -> list[str]:
    """The lines drawn inside the panel whose top border carries `title`."""
    top = next(i for i, line in enumerate(lines) if f"─ {title}" in line)
    bottom = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("╰"))
    return lines[top + 1 : bottom]


def _ran(scale: float = 1.0, run_id: int = 7) -> SweepRan:
    samples = [s.__class__(**{**s.as_dict(), "decode_tok_s": s.decode_tok_s * scale,
                              "step_time_s": s.step_time_s / scale})
               for s in views.repeated_sweep()]  # fmt: skip
    return SweepRan("context", MethodResult("context-sweep", run_id, samples, summarize(samples),
                                            model=fit(samples)))  # fmt: skip


def _points_in_view(lines: list[str], ran: SweepRan) -> None:
    # Inside the table's border (at 160 columns the verdict panel is beside it).
    shown = [line.split("│")[1] for line in _panel(lines, "points")]
    for p in ran.result.points:
        row = [line for line in shown if f" {p.text_type} " in line and f" {p.context} " in line]
        tok_s = f"{p.pooled.tok_s.value:.1f}"
        assert len(row) == 1 and tok_s in row[0], (p.text_type, p.context, "\n".join(lines))


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_a_sweep_and_its_model_are_in_view(size: tuple[int, int]) -> None:
    app, run_before = views.scenario("sweeps")  # points, model and a verdict (views.py)
    async with app.run_test(size=size) as pilot:
        await run_before(pilot)
        screen = app.screen
        lines = _lines(app)
        _points_in_view(lines, _ran())
        verdict = "\n".join(_panel(lines, "verdict"))
        assert "Not physics: 40.0 tok/s is -44% [-46%…-41%]" in verdict, "\n".join(lines)
        assert "q Quit" in lines[-1], lines[-1]  # nothing pushed the footer off

        # A newer sweep: its points and its model's summary, from the panel's top.
        screen.query_one("#verdict-scroll").scroll_end(animate=False)
        newer = _ran(0.9, run_id=8)
        screen.post_message(newer)
        await views.settle(pilot)
        lines = _lines(app)
        _points_in_view(lines, newer)
        verdict = "\n".join(_panel(lines, "verdict"))
        assert "model from this sweep (run 8)" in verdict, "\n".join(lines)
        assert "step time = " in verdict and "commit on code" in verdict, verdict
        assert "commit on prose" in verdict, verdict
        # How it ended, whole: on the table's edge where the buttons leave the note no room.
        assert any("16 requests, stored as run 8" in line for line in lines), "\n".join(lines)
        assert "q Quit" in lines[-1], lines[-1]


async def test_the_folded_form_unfolds_and_folds_again() -> None:
    app, run_before = views.scenario("sweeps")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_before(pilot)
        screen = app.screen
        folded = next(line for line in _lines(app) if "Edit sweep ▸" in line)
        assert "context · 64,256,512,1024 · out 64 · code,prose" in folded, folded
        assert screen.has_class("-folded")

        screen.query_one("#sweep-folded").focus()
        await pilot.press("enter")
        await views.settle(pilot)
        assert not screen.has_class("-folded") and screen.focused.id == "sweep-kind"
        await pilot.press("tab", *"32,128", "escape")  # the contexts, then leave
        await views.settle(pilot)
        assert screen.query_one("#sweep-contexts", Input).value.startswith("32,128")
        assert screen.has_class("-folded")
        folded = next(line for line in _lines(app) if "Edit sweep ▸" in line)
        assert "context · 32,128" in folded, folded  # the line says what the form holds


async def test_the_form_stays_open_at_160x48() -> None:
    app, run_before = views.scenario("sweeps")
    async with app.run_test(size=(160, 48)) as pilot:
        await run_before(pilot)
        lines = _lines(app)
        assert not app.screen.has_class("-folded")
        assert not any("Edit sweep ▸" in line for line in lines)
        assert any("contexts (tokens)" in line for line in lines)
        _points_in_view(lines, _ran())


async def test_the_hidden_folded_line_never_takes_the_focus() -> None:
    # Tall, the form never folds: the focus starts in the form and the first Tab goes to
    # the contexts, as typing "Tab 1 Tab 7" expects (a hidden line once took both).
    app, run_before = views.scenario("sweeps")
    async with app.run_test(size=(160, 50)) as pilot:
        await run_before(pilot)
        assert app.screen.focused is not None and app.screen.focused.id == "sweep-kind"
        await pilot.press("tab")
        assert app.screen.focused is not None and app.screen.focused.id == "sweep-contexts"
