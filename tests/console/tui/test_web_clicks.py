"""The field report's whole story in the browser by mouse alone.

In a live demo nobody types ctrl+t (the browser would open a tab): every action has a
button or a clickable footer key, and every value is entered by clicking its field and
typing the value (its old text selected by a drag, never a key binding). This drives
`specconsole web local` in Debian's Chromium with Playwright against the bundled engine,
never presses a key, and reads each step's effect from xterm's buffer (see test_web.py):

  start; a short and a long prompt; a context sweep of the field's contexts; a verdict on
  a typed figure; a parser change with its baseline before and after; rollback; two runs
  explained in History; break-even.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.console.tui.conftest_web import LocalEngine, local_engine, wait_for_port
from tests.console.tui.test_web import READ_SCREEN, _open_console, _serve, browser

__all__ = ["browser", "local_engine"]  # the fixtures, imported for pytest

# Where xterm draws its cells, to turn a (row, column) of the buffer into a click.
SCREEN_BOX = """() => {
  const term = window.__xterms[0];
  const box = term.element.querySelector('.xterm-screen').getBoundingClientRect();
  return {x: box.left, y: box.top, w: box.width, h: box.height,
          cols: term.cols, rows: term.rows};
}"""


def _screen(page: Any) -> list[str]:
    return page.evaluate(READ_SCREEN)["text"].split("\n")


def _click_text(
    page: Any, label: str, *, last: bool = False, timeout: float = 30, must: bool = True
) -> bool:
    """Click the middle of `label` where xterm shows it (the bottom-most one if `last`);
    False when it never appeared and not `must` (else the test fails)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _screen(page)
        hits = [(y, row.find(label)) for y, row in enumerate(rows) if label in row]
        if hits:
            y, x = hits[-1] if last else hits[0]
            box = page.evaluate(SCREEN_BOX)
            cw, ch = box["w"] / box["cols"], box["h"] / box["rows"]
            page.mouse.click(box["x"] + (x + len(label) / 2) * cw, box["y"] + (y + 0.5) * ch)
            return True
        page.wait_for_timeout(200)
    if not must:
        return False
    pytest.fail(f"{label!r} never appeared; the screen was:\n" + "\n".join(_screen(page)))


def _wait(page: Any, what: str, test: Any, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = "\n".join(_screen(page))
        if test(text):
            return text
        page.wait_for_timeout(250)
    pytest.fail(f"never saw {what}; the screen was:\n{text}", pytrace=False)


def _find(page: Any, label: str, *, last: bool = False, timeout: float = 30) -> tuple[int, int]:
    """(row, column) where `label` is drawn (the bottom-most if `last`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _screen(page)
        hits = [(y, row.find(label)) for y, row in enumerate(rows) if label in row]
        if hits:
            return hits[-1] if last else hits[0]
        page.wait_for_timeout(200)
    pytest.fail(f"{label!r} never appeared; the screen was:\n" + "\n".join(_screen(page)))


def _cell(page: Any, y: int, x: float) -> tuple[float, float]:
    box = page.evaluate(SCREEN_BOX)
    cw, ch = box["w"] / box["cols"], box["h"] / box["rows"]
    return box["x"] + (x + 0.5) * cw, box["y"] + (y + 0.5) * ch


def _type_into(page: Any, y: int, x: int, value: str) -> None:
    """Click the field whose text starts at (y, x), drag over all of its text (the mouse
    is captured by the field, so past its end selects to the end) and type `value` over
    the selection."""
    page.mouse.move(*_cell(page, y, x))
    page.mouse.down()
    page.mouse.move(*_cell(page, y, x + 60), steps=4)
    page.mouse.up()
    page.keyboard.type(value)
    page.wait_for_timeout(300)


def _fill(page: Any, label: str, value: str, *, shown: str = "") -> None:
    """Type `value` into the field labelled `label`: above its input (the forms), or,
    with `shown` (what the field shows now: its text or placeholder), beside it (the
    one-row forms: label, a space, the input), found by both so the label is not
    mistaken for the same word elsewhere."""
    if shown:
        y, x = _find(page, f"{label} {shown}")
        _type_into(page, y, x + len(label) + 1, value)
        where = f"{label} {value}"
    else:
        y, x = _find(page, label)
        rows = _screen(page)
        # A bordered input (tall terminals) has its text one row further down.
        y += 2 if "▔" in rows[y + 1][x : x + 4] else 1
        _type_into(page, y, x - 1, value)  # the input's left edge: its first character
        where = value
    _wait(page, f"{value!r} in {label!r}", lambda t: where in t, timeout=15)


def _views_key(page: Any, key: str, name: str) -> None:
    """A view by its footer key, or through the views menu where the footer has no room."""
    if any(f"{key} {name}" in row for row in _screen(page)[-2:]):
        _click_text(page, f"{key} {name}", last=True)
    elif _click_text(page, "Views", last=True, timeout=5, must=False):
        # "g Views", or "Views" in a text field; a click that landed while the footer
        # rebuilt (the focus leaving the field) opens no menu: `_view` clicks again
        _click_text(page, f"{key}  {name}", timeout=5, must=False)


def _view(page: Any, key: str, name: str, shown: Any) -> str:
    """Open a view by its footer key and wait until `shown(screen)`. Textual's footer
    rebuilds its keys whenever the bindings change (an action ending, the focus moving):
    a click that lands while it does reaches no key, as a hurried operator sees, and is
    clicked again, at most twice more."""
    for _ in range(3):
        _views_key(page, key, name)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            text = "\n".join(_screen(page))
            if shown(text):
                return text
            page.wait_for_timeout(250)
    return _wait(page, f"the {name} view", shown, 5)


def _idle(page: Any) -> None:
    """No action running (the status bar's "(C cancels)" gone): a new one may start."""
    _wait(page, "no action running", lambda t: "(C cancels)" not in t.split("\n")[0], 600)


@pytest.mark.timeout(2400)  # two sweeps' worth of requests and five restarts on a shared CPU
def test_the_field_report_story_by_clicks_only(
    browser: Any, local_engine: LocalEngine, tmp_path: Path
) -> None:
    port, server = _serve(local_engine, tmp_path)
    with server as proc:
        wait_for_port(port, 60, proc)
        page, _ = _open_console(browser, f"http://127.0.0.1:{port}/", size=(1500, 950))
        page.keyboard.press = None  # type: ignore[assignment]  # clicks only, by construction

        # 1. Start, by the Service view's button.
        _view(page, "s", "Service", lambda t: "Start (S)" in t)
        _click_text(page, "Start (S)")
        _wait(page, "the engine ready", lambda t: re.search(r"local\s+builtin\s+ready", t))
        _idle(page)

        # 2. A short prompt and a long one: each result is the selected first row.
        _view(page, "p", "Prompt lab", lambda t: "Run prompt (r)" in t)
        _fill(page, "max tokens", "24")
        for context in ("64", "1500"):
            _fill(page, "context (tokens)", context)
            _click_text(page, "Run prompt (r)")
            row = re.compile(rf"code\s+{context}\s+24/24\s")
            _wait(page, f"the {context}-token prompt's row", lambda t, r=row: r.search(t), 300)
            _idle(page)

        # 3. The field report's sweep contexts, typed in one go.
        _view(page, "w", "Sweeps", lambda t: "Run sweep (r)" in t and "Verdict (v)" in t)
        _fill(page, "contexts (tokens)", "64,512,1024,1900")
        _fill(page, "output tokens", "16")
        _fill(page, "text types", "code")
        _fill(page, "repeat", "2", shown="auto")  # a verdict needs a spread to resample
        _click_text(page, "Run sweep (r)")
        _wait(page, "the sweep running", lambda t: "requests" in t or "model from" in t, 60)
        text = _wait(page, "the fitted model", lambda t: "model from this sweep" in t, 600)
        assert re.search(r"code\s+1900\s+\d", text), text  # the last context, measured
        _idle(page)

        # 4. A verdict on a typed figure (the field's "is 40 tok/s at 1900 physics?").
        _fill(page, "observed", "40", shown="tok/s")
        _fill(page, "prompt", "1900", shown="tokens")
        _click_text(page, "Verdict (v)")
        text = _wait(page, "the verdict", lambda t: "(model from this sweep" in t and "40" in t)
        assert re.search(r"(physics|Physics|Not enough evidence)", text), text

        # 5. A parser change with its baseline before and after: the flag's row, its value
        # typed into the box, Stage, the baseline ticked with small settings, Review &
        # apply, Yes; the before/after table opens and closes by its button.
        _view(page, "f", "Flags", lambda t: "reasoning-parser" in t and "Stage (Enter)" in t)
        _click_text(page, "reasoning-parser")
        _click_text(page, "new value (blank: default)")
        page.keyboard.type("qwen3")
        _wait(page, "the value in its box", lambda t: re.search(r"▊\s+qwen3\s+▎", t), 15)
        _click_text(page, "Stage (Enter)")
        _wait(page, "the edit staged", lambda t: "--reasoning-parser = qwen3" in t, 30)
        _click_text(page, "before/after")
        _fill(page, "ctx", "64,512", shown="profile's")
        _fill(page, "out", "16", shown="96")
        _fill(page, "text", "code", shown="code,prose")
        _fill(page, "repeat", "2", shown="auto")
        _click_text(page, "calibrate")  # unticked: no noise calibration first (time)
        _click_text(page, "Review & apply (a)")
        _wait(page, "the confirm question", lambda t: "Apply and restart local?" in t)
        _click_text(page, "Yes (y)")
        text = _wait(page, "the before/after", lambda t: "Baseline before and after" in t, 900)
        assert re.search(r"code\s+64\b", text) and re.search(r"code\s+512\b", text), text
        page.screenshot(path=str(tmp_path / "before-after.png"))
        _click_text(page, "OK", last=True)
        _wait(page, "the modal closed", lambda t: "Baseline before and after" not in t)
        _idle(page)
        _wait(page, "the new flag in force", lambda t: re.search(r"reasoning-parser\s+qwen3", t))

        # 6. Rollback, by the Service view's button and the confirm's Yes.
        _view(page, "s", "Service", lambda t: "Roll back (B)" in t)
        _click_text(page, "Roll back (B)")
        _wait(page, "the rollback question", lambda t: "Roll back local" in t, 60)
        _click_text(page, "Yes (y)")
        _wait(page, "ready again", lambda t: re.search(r"local\s+builtin\s+ready", t), 300)
        _idle(page)
        _view(page, "f", "Flags", lambda t: "Stage (Enter)" in t)
        _wait(page, "the parser rolled back", lambda t: re.search(r"reasoning-parser\s+-\s", t))

        # 7. Two runs explained in History: the baseline's before and after.
        _view(page, "h", "History", lambda t: "runs" in t and "Mark (space)" in t)
        for nth in (0, 1):
            _click_row(page, "baseline", nth)
            _click_text(page, "Mark (space)")
            _wait(page, f"{nth + 1} marked", lambda t, n=nth: t.count("●") == n + 1, 10)
        _click_text(page, "Explain (v)")
        _wait(page, "the explanation", lambda t: "explained against run" in t, 60)

        # 8. Break-even on the sweep form's contexts (remembered), by its button.
        _view(page, "w", "Sweeps", lambda t: "Break-even (b)" in t)
        _click_text(page, "Break-even (b)")
        text = _wait(page, "the break-even table", lambda t: "break-even done" in t, 900)
        assert "commit needed" in text or "break-even run" in text, text
        page.screenshot(path=str(tmp_path / "breakeven.png"))
        page.close()
    assert proc.returncode is not None


def _click_row(page: Any, word: str, nth: int) -> None:
    """Click the `nth` (0-based) screen row that contains `word`."""
    rows = [y for y, row in enumerate(_screen(page)) if word in row]
    assert len(rows) > nth, f"fewer than {nth + 1} rows with {word!r}:\n" + "\n".join(_screen(page))
    box = page.evaluate(SCREEN_BOX)
    ch = box["h"] / box["rows"]
    page.mouse.click(box["x"] + box["w"] / 3, box["y"] + (rows[nth] + 0.5) * ch)
    page.wait_for_timeout(300)
