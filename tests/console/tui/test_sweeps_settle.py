"""The verdict's settling measurement in the sweeps view (pilot, fixed data), as
`diagnose --settle` offers and prints it.

A typed figure on the operator's own passages carries the spread between passages of its
text. When that spread leaves the verdict open, the view offers the settling run: the
Settle button appears and `e` runs it; its answer replaces the verdict, and the button
goes until a verdict offers another. "on: sweep" says the figures were measured on the
sweep's own passages (`--passages sweep`): no passage term, no offer; anything else in
that field is refused in one sentence.
"""

from __future__ import annotations

from console.analysis.decompose import fit
from console.analysis.verdict import Sweep
from console.experiments.settle import judge_settled
from console.tui.messages import SettleRan
from tests.console.tui import fakes, views


def _spread_sweep() -> list:
    """The fixed sweep on two passages a point, each read twice (1% apart), the passages
    a factor of 1.6 apart (commit differs between passages of a text): a figure on other
    passages could sit far off what the model says."""
    out = []
    for s in fakes.sweep_samples():
        for window, passage in enumerate((0.8, 1.25)):
            for read in (0.99, 1.01):
                k = passage * read
                out.append(s.__class__(**{
                    **s.as_dict(), "prompt_id": f"{s.prompt_id[:-2]}#{window}",
                    "decode_tok_s": s.decode_tok_s * k, "commit_len": s.commit_len * passage,
                    "step_time_s": s.step_time_s / read, "decode_time_s": s.decode_time_s / k,
                }))  # fmt: skip
    return out


def _verdict(app) -> str:
    return str(app.screen.query_one("#verdict").render())


async def _explain(pilot, on: str, samples: list | None = None) -> None:
    screen = pilot.app.screen
    samples = samples or _spread_sweep()
    screen._set_model(fit(samples), "fixed samples", samples)
    for selector, value in (("#v-observed", "40"), ("#v-context", "1024"), ("#v-text", "prose"),
                            ("#v-passages", on)):  # fmt: skip
        screen.query_one(selector).value = value
    screen.action_explain()
    await views.settle(pilot)


async def test_an_open_verdict_offers_settling_and_shows_its_answer() -> None:
    app, run_before = views.scenario("sweeps")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_before(pilot)
        screen = app.screen
        button = screen.query_one("#sweep-settle-button")
        assert not button.display  # the scenario's verdict (two close passages) is settled

        await _explain(pilot, "")  # blank: the operator's own passages
        assert _verdict(app).startswith("Not enough evidence"), _verdict(app)
        assert "passages" in _verdict(app)
        assert button.display and screen._settle is not None
        assert any("e settles it" in n.message for n in app._notifications)

        # The settling run's answer (the samples the plan's sweep would measure: here the
        # fixed sweep itself, whose prose point at 1024 reads about 71 tok/s).
        plan = screen._settle
        settled = judge_settled(plan, Sweep(tuple(_spread_sweep()), "gpu1"), run_id=9)
        screen.post_message(SettleRan(settled))
        await views.settle(pilot)
        shown = _verdict(app)
        assert shown.splitlines()[0] == settled.verdict.text().splitlines()[0]
        assert "observed vs measured" in shown and "settling run 9" in shown, shown
        assert not button.display and screen._settle is None

        # Nothing on offer: `e` says so and runs nothing.
        await pilot.press("e")
        await views.settle(pilot)
        assert any("Nothing to settle" in n.message for n in app._notifications)
        assert not app.running


async def test_figures_on_the_sweep_s_passages_carry_no_passage_term() -> None:
    app, run_before = views.scenario("sweeps")
    async with app.run_test(size=(100, 30)) as pilot:
        await run_before(pilot)
        await _explain(pilot, "sweep", views.repeated_sweep())
        shown = _verdict(app)
        assert shown.startswith("Not physics"), shown
        assert not app.screen.query_one("#sweep-settle-button").display

        await _explain(pilot, "mine", views.repeated_sweep())
        assert any("own (your prompts), same" in n.message for n in app._notifications)
