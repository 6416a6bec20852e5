"""`specconsole diagnose` and the TUI's ctrl+l verdict on the same stored live data give
the same observed figures, the same inferred text type and the same verdict."""

from __future__ import annotations

import time

from console.analysis.decompose import fit
from console.analysis.live_window import explain_live
from console.analysis.records import LiveSample, RunInfo
from console.analysis.verdict import Sweep
from console.commands.measure import stored_live_window
from console.store import RunStore
from console.tui.app import SpecConsoleApp
from console.tui.settings import TuiSettings
from tests.console.tui import fakes


def _live_minute(now: float) -> list[LiveSample]:
    """Four minutes of prose-like decoding at growing context (commit 2.3, step 20 ms +
    10 ms per 1k), a sample every 10 s, 5 s off the window's edge (the TUI reads the clock
    a few seconds after the CLI here), plus a note and a sample without context that
    neither face may count."""
    out = []
    for i in range(24):
        ctx = 800 + 50 * i
        step = 0.020 + 0.010 * ctx / 1000
        out.append(LiveSample(t=now - 235 + 10 * i, source="log", tok_s=2.3 / step,
                              commit_len=2.3, step_time_s=step, context_tokens=ctx))  # fmt: skip
    out.append(LiveSample(t=now - 1, source="metrics", note="no /metrics"))
    out.append(LiveSample(t=now - 1, source="log", tok_s=500.0, commit_len=9.0, step_time_s=0.02))
    return out


async def test_diagnose_and_the_tui_give_the_same_verdict_on_the_same_stored_samples() -> None:
    host = "gpu1"
    store = RunStore.default()
    run_id = await store.start_run(RunInfo(host=host, engine="builtin", method="watch",
                                           params={}, flags={}))  # fmt: skip
    for sample in _live_minute(time.time()):
        await store.add_live(run_id, sample)
    await store.finish_run(run_id, "complete")
    samples = fakes.sweep_samples()
    model = fit(samples)

    # The CLI: what `diagnose gpu1` (no --observed, --text or --context) reads and explains.
    window = await stored_live_window(store, host, 60.0)
    cli = explain_live(Sweep(tuple(samples), host), window)
    assert cli.inferred and cli.text_type == "prose"
    # the live minute sits at ~1800 tokens, the sweep reached 1024: refused, with the sweep
    assert cli.verdict.outcome == "not enough evidence"
    assert "outside the swept contexts" in cli.verdict.headline
    assert cli.verdict.offer and "specconsole sweep gpu1 --contexts" in cli.verdict.offer
    assert window.n == 6 and window.commit == 2.3  # the last minute, figures only

    # The TUI: the same stored samples in the dashboard's series, ctrl+l, ctrl+t.
    stored = (await store.run(run_id)).live
    store.close()
    service = fakes.FakeService()
    app = SpecConsoleApp(host, settings=TuiSettings(), service=service, poll=False,
                         live=False)  # type: ignore[arg-type]  # fmt: skip
    async with app.run_test(size=(150, 48)) as pilot:
        app.status = await service.status()
        app.ingest_live(stored)
        await pilot.press("w")
        await pilot.pause()
        await app.workers.wait_for_complete()
        screen = app.screen
        screen._set_model(model, "fixed samples", samples)
        screen.action_use_live()
        assert screen._live == window
        assert screen._verdict(model) == cli.verdict
        screen.action_explain()
        await pilot.pause()
        shown = str(screen.query_one("#verdict").render())
        offered = screen.query_one("#sweep-contexts").value
        offered_repeat = screen.query_one("#sweep-repeat").value
    assert cli.verdict.headline in shown
    assert all(line in shown for line in cli.verdict.lines)
    assert cli.verdict.offer in shown
    # the TUI's offer: the sweep form holds the contexts the verdict needs (ctrl+r runs it)
    assert offered == ",".join(str(c) for c in cli.verdict.offer_contexts)
    assert offered_repeat == "3" and cli.verdict.offer_text_types


async def test_history_v_explains_two_marked_runs_as_history_explain_does() -> None:
    """Two stored prompt runs and a sweep: space marks two runs, v shows the verdict lines
    `specconsole history explain` prints for them."""

    from console.experiments.explain import explain_runs
    from tests.console.experiments.test_explain import _fill

    store = RunStore.default()
    ids = await _fill(store)
    expected = await explain_runs(store, await store.run(ids["short"]),
                                  await store.run(ids["long"]))  # fmt: skip
    store.close()
    service = fakes.FakeService()
    app = SpecConsoleApp("gpu1", settings=TuiSettings(), service=service, poll=False,
                         live=False)  # type: ignore[arg-type]  # fmt: skip
    async with app.run_test(size=(150, 48)) as pilot:
        app.status = await service.status()
        await pilot.press("h")
        await pilot.pause()
        await app.workers.wait_for_complete()
        screen = app.screen
        screen.marked = [ids["short"], ids["long"]]
        await pilot.press("v")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = str(screen.query_one("#hist-text").render())
    _label, judged = expected.pairs[0]
    assert judged.outcome == "physics"
    assert judged.headline in shown.replace("\n", " ") or judged.headline[:60] in shown
    assert f"run {ids['long']} (prompt" in shown
