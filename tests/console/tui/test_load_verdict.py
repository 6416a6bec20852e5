"""The sweeps view's verdict with a number of streams (`diagnose --concurrency`): the
typed pair goes to the stored load run's load factor, not to the sweep's model, and the
panel shows the same lines the command prints. Pilot, the fixed scenario; the stored run
is the synthetic engine of test_load_table, handed in where the store would give it."""

from __future__ import annotations

import pytest

from console.analysis.load_factor import judge_load
from console.experiments import load as load_experiment
from tests.console.analysis.test_load_table import COMMIT, _run, _step_s
from tests.console.tui import views


def _rate(n: int) -> float:
    return COMMIT / _step_s(n, True)


async def test_streams_read_the_pair_through_the_load_factor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[dict] = []

    async def stored_run_verdict(store, host, flags_hash, *, sampling, **kw):
        asked.append({"host": host, "sampling": sampling, **kw})
        return judge_load(_run(), spec_hash="spec", source="load run 7", **kw)

    monkeypatch.setattr(load_experiment, "typed_load_verdict", stored_run_verdict)
    app, run_before = views.scenario("sweeps")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_before(pilot)
        screen = app.screen
        for selector, value in (("#v-observed", f"{_rate(4):.1f}"), ("#v-concurrency", "4"),
                                ("#v-baseline", f"{_rate(1):.1f}")):  # fmt: skip
            screen.query_one(selector).value = value
        screen.action_explain()
        await views.settle(pilot)
        text = str(screen.query_one("#verdict").render())
        assert asked and (asked[0]["at_n"], asked[0]["from_n"]) == (4, 1)
        assert asked[0]["sampling"].label == "greedy"  # the session's, checked against the run
        assert text.startswith("Physics: the load explains it"), text
        assert "load: one stream at concurrency 1 -> 4" in text and "load run 7" in text
        # a stream count that is no whole number is refused in one sentence, nothing asked
        screen.query_one("#v-concurrency").value = "2.5"
        screen.action_explain()
        await views.settle(pilot)
        assert len(asked) == 1
