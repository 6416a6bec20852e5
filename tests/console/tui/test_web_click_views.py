"""Every view and modal by mouse in the browser, with the engine down (no start needed).

`specconsole web local` in Chromium at 800x600, clicks only: History's Mark, Compare and
Explain buttons (which did nothing when clicked before: their handler never awaited the
action), the Keys screen's close button (the modal covers the footer, so without one a
mouse could not leave it), and the footer's `g Views` menu, which stands in for the view
keys when they do not all fit. The effect of each click is read from xterm's buffer.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.console.tui.conftest_web import REPO, LocalEngine, local_engine, wait_for_port
from tests.console.tui.test_web import _serve, browser
from tests.console.tui.test_web_clicks import SCREEN_BOX, _click_text, _screen, _wait

__all__ = ["browser", "local_engine"]  # the fixtures, imported for pytest
pytestmark = pytest.mark.timeout(300)

SEED = "import asyncio; from tests.console.tui import views; asyncio.run(views.store_history())"


def _click_row(page: Any, word: str, nth: int) -> None:
    """Click the `nth` (0-based) screen row that contains `word`."""
    rows = [y for y, row in enumerate(_screen(page)) if word in row]
    assert len(rows) > nth, f"fewer than {nth + 1} rows with {word!r}:\n" + "\n".join(_screen(page))
    box = page.evaluate(SCREEN_BOX)
    ch = box["h"] / box["rows"]
    page.mouse.click(box["x"] + box["w"] / 3, box["y"] + (rows[nth] + 0.5) * ch)
    page.wait_for_timeout(300)


def test_history_keys_and_views_by_clicks_at_800x600(
    browser: Any, local_engine: LocalEngine, tmp_path: Path
) -> None:
    # Two stored runs in the console's history (the web server's environment).
    subprocess.run([sys.executable, "-c", SEED], env=local_engine.env, cwd=REPO, check=True)
    port, server = _serve(local_engine, tmp_path)
    with server as proc:
        wait_for_port(port, 60, proc)
        from tests.console.tui.test_web import _open_console

        page, _ = _open_console(browser, f"http://127.0.0.1:{port}/", size=(800, 600))
        page.keyboard.press = None  # type: ignore[assignment]  # clicks only, by construction
        # 800x600 is too narrow for all seven view keys: the footer offers the menu.
        _click_text(page, "Views", last=True)  # "g Views", or "Views" in a text field
        _wait(page, "the views menu", lambda t: "Views" in t and "History" in t)
        _click_text(page, "h  History")
        _wait(page, "the history view", lambda t: "2/2 runs" in t)
        _click_row(page, "context-sweep", 0)
        _click_text(page, "Mark (space)")
        _wait(page, "one run marked", lambda t: t.count("●") == 1, timeout=10)
        _click_row(page, "context-sweep", 1)
        _click_text(page, "Mark (space)")
        _wait(page, "two runs marked", lambda t: t.count("●") == 2, timeout=10)
        _click_text(page, "Compare (c)")
        _wait(page, "the comparison", lambda t: "run 1 (A) vs run 2 (B)" in t)
        _click_text(page, "Explain (v)")
        _wait(page, "the explanation", lambda t: "run 2 explained against run 1" in t)
        _click_text(page, "? Keys", last=True)
        _wait(page, "the keys screen", lambda t: "Close (Esc)" in t and "Where" in t)
        _click_text(page, "Close (Esc)")
        _wait(page, "the keys screen closed", lambda t: "Close (Esc)" not in t and "runs" in t)
        page.screenshot(path=str(tmp_path / "history-800x600.png"))
        page.close()
    assert proc.returncode is not None
