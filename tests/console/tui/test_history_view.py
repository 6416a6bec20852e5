"""History tells the truth: the detail title names what it shows, the list follows runs
stored elsewhere, each run says its kind, and its parameters read as words."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from console.analysis.records import RunInfo
from console.store import RunStore
from console.tui.screens import history
from tests.console.tui import fakes, views


async def test_title_follows_the_selection_and_the_list_follows_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(history, "CHECK_EVERY_S", 0.2)
    await views.store_history()
    service = fakes.FakeService()
    app = views.app_for(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await views.ready(pilot, service)
        await pilot.press("h")
        await views.settle(pilot)
        detail = app.screen.query_one("#hist-detail")
        await pilot.press("space", "down", "space", "c")
        await views.settle(pilot)
        assert detail.border_title == "run 1 (A) vs run 2 (B)"
        await pilot.press("up")
        await views.settle(pilot)
        assert detail.border_title == "run 2 (sweep)", "the title still named the comparison"
        # A run stored by another process (the CLI) shows up without a key press.
        store = RunStore.default()
        info = RunInfo(host="gpu1", engine="builtin", method="probe", flags={},
                       params={"contexts": [256, 1792]}, started_at=fakes.T0 + 1200)  # fmt: skip
        run_id = await store.start_run(info)
        store.close()
        for _ in range(30):
            await pilot.pause(0.1)
            if app.screen.query_one("#hist-runs", DataTable).row_count == 3:
                break
        table = app.screen.query_one("#hist-runs", DataTable)
        assert table.row_count == 3, [n.message for n in app._notifications]
        kinds = {str(table.get_row_at(i)[4]) for i in range(3)}
        assert kinds == {"sweep", "prompt"}, kinds
        assert run_id == 3


def test_params_read_as_words_not_a_python_dict() -> None:
    text = history.params_text({"contexts": [256, 1792], "output_tokens": 64})
    assert text == "contexts 256,1792; output_tokens 64"
    assert "{" not in text and "[" not in text
