"""The browser demo by mouse alone: from the dashboard to a verdict with clicks only.

In a live demo nobody types ctrl+t (the browser would open a tab): every main action
has a button or a clickable footer key. This drives `specconsole web local` in Debian's
Chromium with Playwright and never presses a key: it clicks the footer's Service key,
Start, the footer's Sweeps key, Run sweep, Live figures and Verdict, reading xterm's
buffer (see test_web.py) to find where each label is drawn.
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


def _click_text(page: Any, label: str, *, last: bool = False, timeout: float = 30) -> None:
    """Click the middle of `label` where xterm shows it (the bottom-most one if `last`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _screen(page)
        hits = [(y, row.find(label)) for y, row in enumerate(rows) if label in row]
        if hits:
            y, x = hits[-1] if last else hits[0]
            box = page.evaluate(SCREEN_BOX)
            cw, ch = box["w"] / box["cols"], box["h"] / box["rows"]
            page.mouse.click(box["x"] + (x + len(label) / 2) * cw, box["y"] + (y + 0.5) * ch)
            return
        page.wait_for_timeout(200)
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


@pytest.mark.timeout(1500)  # a sweep and a break-even (two restarts) on a shared CPU
def test_the_verdict_is_reached_by_clicking_only(
    browser: Any, local_engine: LocalEngine, tmp_path: Path
) -> None:
    port, server = _serve(local_engine, tmp_path)
    with server as proc:
        wait_for_port(port, 60, proc)
        page, _ = _open_console(browser, f"http://127.0.0.1:{port}/", size=(1500, 950))
        page.keyboard.press = None  # type: ignore[assignment]  # clicks only, by construction
        _click_text(page, "s Service", last=True)
        _click_text(page, "Start (S)")
        _wait(page, "the engine ready", lambda t: re.search(r"local\s+builtin\s+ready", t))
        # A prompt, by its button: the newest result is the selected first row.
        _click_text(page, "p Prompt lab", last=True)
        # The start action ends a moment after ready shows; a run before then is refused.
        _wait(page, "no action running", lambda t: "(C cancels)" not in t.split("\n")[0])
        _click_text(page, "Run prompt (r)")
        _wait(page, "the prompt's result", lambda t: "request(s), stored as run" in t, 240)
        _click_text(page, "w Sweeps", last=True)
        # Browser-safe keys in a browser: the buttons name r, v and o, not ctrl keys.
        _wait(page, "the sweeps view", lambda t: "Run sweep (r)" in t and "Verdict (v)" in t)
        _click_text(page, "Run sweep (r)")
        _wait(page, "the fitted model", lambda t: "model from this sweep" in t, timeout=240)
        _click_text(page, "Live figures (o)")
        _click_text(page, "Verdict (v)")
        text = _wait(page, "the verdict", lambda t: "(model from this sweep" in t)
        assert "tok/s" in text
        page.screenshot(path=str(tmp_path / "verdict.png"))  # kept with the test's tmp dir
        # Where speculation stops paying, by its button, on the sweep form's contexts:
        # the table with each context's speedup interval and the experiment's verdict.
        _click_text(page, "Break-even (b)")
        text = _wait(page, "the break-even table", lambda t: "break-even done" in t, timeout=900)
        assert "commit needed" in text or "break-even run" in text, text
        # History by its footer key, or through the views menu where the footer has no
        # room for every view key.
        if any("h History" in row for row in _screen(page)[-2:]):
            _click_text(page, "h History", last=True)
        else:
            _click_text(page, "g Views", last=True)
            _click_text(page, "h  History")
        _wait(page, "the history view", lambda t: "runs" in t and "Mark (space)" in t)
        page.screenshot(path=str(tmp_path / "history.png"))
        page.close()
    assert proc.returncode is not None
