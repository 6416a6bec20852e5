"""Text that must be cut says so, and text that must not be broken is not (pilot, fixed
data): log lines end in "…" where the view is too narrow, and are whole again when it
widens; a long flag name breaks only between its words; History's comparison keeps
each row on one line at 80x24.
"""

from __future__ import annotations

import re

import pytest
from textual.app import App

from console.tui.widgets.flag_title import name_lines
from console.tui.widgets.line_log import LineLog
from tests.console.tui import views

LONG = "[12:00:21] Decode batch, #running-req: 1, #token: 1180, accept len: 3.1, gen throughput (token/s): 101.0"  # noqa: E501


def _lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def test_a_log_line_too_wide_ends_in_an_ellipsis_and_is_whole_when_wider() -> None:
    class One(App):
        def compose(self):
            yield LineLog(wrap=False)

    app = One()
    async with app.run_test(size=(60, 5)) as pilot:
        log = app.query_one(LineLog)
        log.write_line(LONG)
        log.write_line("short line")
        await pilot.pause()
        shown = _lines(app)
        assert shown[0].rstrip().endswith("…") and shown[0].startswith(LONG[:50]), shown[0]
        assert shown[1].strip() == "short line"
        await pilot.resize_terminal(len(LONG) + 4, 5)
        await pilot.pause()
        assert _lines(app)[0].rstrip() == LONG  # drawn again at the new width, whole


def test_a_flag_name_breaks_only_after_a_hyphen() -> None:
    name = "--speculative-draft-window-size"
    assert name_lines(name, 40) == [name]
    assert name_lines(name, 20) == ["--speculative-draft-", "window-size"]
    for width in (8, 12, 14, 20, 25):
        lines = name_lines(name, width)
        assert all(len(line) <= width for line in lines)
        # Every line but a cut one ends a word: joined, they are the name again.
        if not any(line.endswith("…") for line in lines):
            assert "".join(lines) == name
            assert all(line.endswith("-") for line in lines[:-1])


async def test_the_flag_panel_title_is_never_broken_mid_word_at_80x24() -> None:
    app, run_before = views.scenario("flags")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_before(pilot)
        screen = app.screen
        screen._select("speculative-draft-window-size")
        await pilot.pause()
        title = screen.query_one("#flag-title")
        text = str(title.render())
        width = title.content_region.width
        assert width < len("--speculative-draft-window-size")  # it must break at 80
        assert text.split("\n") == name_lines("--speculative-draft-window-size", width)


def test_history_comparison_rows_are_one_line_each_at_80x24() -> None:
    import asyncio

    app, run_before = views.scenario("history")  # stores two runs (its own event loop)
    asyncio.run(_compared_at_80x24(app, run_before))


async def _compared_at_80x24(app, run_before) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await run_before(pilot)  # two runs marked and compared
        table = app.screen.query_one("#hist-table")
        assert table.row_count == 32  # 8 points x 4 figures
        header = [str(c.label) for c in table.columns.values()]
        assert header[:4] == ["context", "text", "figure", "change"]
        width = sum(c.get_render_width(table) for c in table.columns.values())
        assert width <= table.scrollable_content_region.width  # no row wider than the panel
        assert table.get_row_at(0)[:3] == ["64", "code", "tok/s"]


def test_the_comparison_says_its_interval_in_words() -> None:
    # The sentence above the table names its levels, "[95% interval]" for each run's
    # figure and 99% over all rows for a paired change: shown as text, not read as markup
    # (which dropped it). The table's header says no level (it once said 95% of changes
    # taken at 99%).
    import asyncio

    app, run_before = views.scenario("history")

    async def check() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await run_before(pilot)
            shown = str(app.screen.query_one("#hist-text").render())
            words = " ".join(shown.split())
            assert "figure [95% interval]" in words, shown
            assert "paired by passage [99% over all rows together]" in words, shown

    asyncio.run(check())


HELP = (
    "Where the drafter's weights are read from when none is given, by default "
    "/root/.cache/huggingface/hub/models--z-lab--Qwen3-4B-DFlash-b16/snapshots/"
    "0123456789abcdef0123, or SPECCONSOLE_DRAFTER_CACHE_DIRECTORY_OVERRIDE; at most "
    "123456789012345678 tokens."
)


def _breaks_ok(text: str, lines: list[str], width: int) -> None:
    """`lines` are `text` cut for `width`: at spaces, or after / - _ inside a token
    too long for a line, never between two digits."""
    assert all(len(line) <= width for line in lines), lines
    pos = 0
    for line in lines:
        start = text.index(line, pos)
        assert text[pos:start].strip() == "", (text[pos:start], lines)  # only spaces dropped
        end = start + len(line)
        if end < len(text) and text[end] != " ":  # cut inside a token
            if line[-1].isdigit() and text[end].isdigit():  # only a number wider than a line
                assert len(re.search(r"\d+$", line)[0] + re.match(r"\d+", text[end:])[0]) > width
            assert line[-1] in "/-_" or len(text[start:].split(" ")[0]) > width, line
        pos = end
    assert text[pos:].strip() == ""


def test_help_wraps_at_words_and_breaks_long_tokens_at_separators() -> None:
    from console.tui.widgets.word_wrap import line_spans

    for width in (12, 20, 26, 33, 47, 80):
        lines = [HELP[a:b] for a, b in line_spans(HELP, width)]
        _breaks_ok(HELP, lines, width)
    lines = [HELP[a:b] for a, b in line_spans(HELP, 20)]
    assert "/root/.cache/" in lines and "0123456789abcdef0123," not in lines
    assert not any(line.endswith(("hugg", "Qwe", "DFla")) for line in lines), lines
    # a number wider than the line is the one thing cut where the line ends
    number = "123456789012"
    assert [number[a:b] for a, b in line_spans(number, 5)] == ["12345", "67890", "12"]
    assert [f"ab {number}"[a:b] for a, b in line_spans(f"ab {number}", 13)] == ["ab", number]


async def test_the_flag_help_is_wrapped_at_words_in_the_flags_view(monkeypatch) -> None:
    from dataclasses import replace

    from tests.console.tui import fakes

    specs = tuple(replace(s, help=HELP) if s.name == "context-length" else s for s in fakes.SPECS)
    monkeypatch.setattr(fakes, "SPECS", specs)
    app, run_before = views.scenario("flags")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_before(pilot)
        app.screen._select("context-length")
        await pilot.pause()
        panel = app.screen.query_one("#flag-help")
        width = panel.scrollable_content_region.width
        lines = str(panel.render()).split("\n")
        start = next(i for i, line in enumerate(lines) if line.startswith("Where"))
        assert len(HELP) > 2 * width  # it must wrap, several times
        _breaks_ok(HELP, lines[start:], width)


@pytest.mark.parametrize("size", [(80, 24), (88, 33), (100, 30)], ids=["80x24", "88x33", "100x30"])
async def test_flag_names_are_whole_beside_a_long_path(monkeypatch, size) -> None:
    # Four rows read `speculative-d…` at 88 columns (the browser's 800x600): the value
    # column (a path) and the source column kept their width and the names gave way.
    from dataclasses import replace

    from tests.console.tui import fakes

    path = "/root/.cache/huggingface/hub/models--z-lab--Qwen3-4B-DFlash-b16/snapshots/0123"
    config = replace(fakes.CONFIG, flags={**fakes.FLAGS, "speculative-draft-model-path": path})
    monkeypatch.setattr(fakes, "CONFIG", config)
    drafter = replace(fakes.SPECS[0], name="speculative-draft-model-path", type="str",
                      choices=None, default="None", help="Drafter weights.")  # fmt: skip
    monkeypatch.setattr(fakes, "SPECS", (*fakes.SPECS, drafter))
    app, run_before = views.scenario("flags")
    async with app.run_test(size=size) as pilot:
        await run_before(pilot)
        text = "\n".join(_lines(app))
        names = [s.name for s in fakes.SPECS if s.tuned]
        for name in names:
            assert re.search(rf"│ {name}\s", text), f"{name} cut at {size}:\n{text}"
        # the path gives way, and says so
        assert re.search(r"speculative-draft-model-path\s+/root/\S*…", text), text


@pytest.mark.parametrize("size", [(80, 24), (88, 33)], ids=["80x24", "88x33"])
async def test_last_requests_fit_the_dashboard_without_a_sideways_scroll(size) -> None:
    # Fixed column widths (a 40-cell "measured") overflowed 88 columns, the browser's
    # 800x600, into a horizontal scrollbar over the last row.
    from dataclasses import replace

    from tests.console.tui import fakes

    app, run_before = views.scenario("dashboard")
    async with app.run_test(size=size) as pilot:
        await run_before(pilot)
        flagged = replace(fakes.requests()[0], flagged="the output loops from token 40 on")
        app.ingest_live(requests=[*fakes.requests(), flagged])
        await views.settle(pilot)
        table = app.screen.query_one("#requests")
        assert table.virtual_size.width <= table.scrollable_content_region.width, (
            table.virtual_size, table.scrollable_content_region)  # fmt: skip
        text = "\n".join(_lines(app))
        assert re.search(r"code\s+512\s+128\s+138\.2\s+3\.61\s+26\.1", text), text


def test_a_comparison_s_figures_are_in_view_below_a_short_run_list() -> None:
    # The run list took half the screen whatever its rows: with two runs at 100x30 the
    # comparison's table started at the panel's bottom edge, every figure out of view.
    import asyncio

    app, run_before = views.scenario("history")  # two runs marked and compared

    async def check() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await run_before(pilot)
            shown = [line for line in _lines(app) if re.search(r"[\d\]] → \d", line)]
            assert len(shown) >= 6, "\n".join(_lines(app))
            # the second run decodes at 0.8 of the first (views.store_history), and each
            # figure and change carries its interval
            ranged = r"-20% \[-\d+%…-[\d.]+%\]\s+170\.\d \[[\d.–]+\] → 136\.5 \[[\d.–]+\]"
            assert re.search(rf"64\s+code\s+tok/s\s+{ranged}", shown[0]), shown

    asyncio.run(check())


async def test_a_select_s_value_is_one_line_cut_with_an_ellipsis_at_80x24() -> None:
    # The sweep method read "context" over "sweep", two lines that cost the points
    # table a row.
    app, run_before = views.scenario("sweeps")
    async with app.run_test(size=(80, 24)) as pilot:
        await run_before(pilot)
        app.screen.unfold()  # folded into one line after the sweep (sweeps_fold.py)
        await views.settle(pilot)
        lines = _lines(app)
        assert any(re.search(r"│ context sw\w*… ▼", line) for line in lines), lines[:6]
        assert not any(re.match(r"│ sweep\s", line) for line in lines), lines[:6]


@pytest.mark.parametrize("size", [(88, 33), (80, 24)], ids=["800x600", "80x24"])
async def test_all_seven_key_flags_show(monkeypatch, size) -> None:
    # 88x33 (the browser's 800x600) gave the key flags a header and six rows: the
    # tool-call parser was below the panel's edge; at 80x24 the panel held six rows.
    from dataclasses import replace

    from tests.console.tui import fakes

    tool = replace(fakes.SPECS[-1], name="tool-call-parser", choices=("qwen3",), default="None")
    monkeypatch.setattr(fakes, "SPECS", (*fakes.SPECS, tool))
    app, run_before = views.scenario("dashboard")
    async with app.run_test(size=size) as pilot:
        await run_before(pilot)
        text = "\n".join(_lines(app))
        for label in ("algorithm", "draft tokens", "context length", "tool-call parser"):
            assert label in text, text


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_the_before_after_modal_wraps_its_notes_and_keeps_its_rows_whole(size) -> None:
    # The notes under the comparison (what the figures are, the drift they carry) ran
    # past the dialog's edge as one line each, behind a sideways scrollbar.
    from console.tui.screens.modals import InfoScreen

    table = "text  context  figure  before  after  change\ncode  64  tok/s  242.2  185.9  -23%"
    note = (
        "pooled per side over the passages both sides read, equal weight each (tokens "
        "/ steps / decode time) [95% interval]; changes paired by passage [99% over all "
        "rows together]; a change is a finding only when its interval excludes no change"
    )
    app = App()
    async with app.run_test(size=size) as pilot:
        await app.push_screen(InfoScreen("Baseline before and after", table, [note]))
        await pilot.pause()
        lines = _lines(app)
        shown = " ".join(" ".join(line.strip("│ ▊▎").split()) for line in lines)
        assert "excludes no change" in shown and "[99% over all rows together]" in shown, lines
        rows = [line for line in lines if "code  64  tok/s  242.2  185.9  -23%" in line]
        assert len(rows) == 1, lines  # the table's row on one line, unwrapped
