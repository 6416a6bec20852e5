"""The prompt lab's figures stay in view in the browser at 800x600 (`specconsole web
local` in Chromium, the bundled engine): after a prompt run three times, its pooled row,
the 95% interval under it and all three raw rows are on screen without scrolling, read
from xterm's buffer (see test_web.py). The results table used to take a fixed share of
the screen, and at 800x600 (88x33) two of the three raw rows were below its edge.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.console.tui.conftest_web import LocalEngine, local_engine, wait_for_port
from tests.console.tui.test_web import _open_console, _serve, browser
from tests.console.tui.test_web_clicks import _click_text, _fill, _view, _wait

__all__ = ["browser", "local_engine"]  # the fixtures, imported for pytest
pytestmark = pytest.mark.timeout(600)


def test_a_repeated_prompt_is_in_view_at_800x600(
    browser: Any, local_engine: LocalEngine, tmp_path: Path
) -> None:
    started = local_engine.cli("start", "local", "--wait", timeout=400)
    assert started.returncode == 0, started.stdout + started.stderr
    port, server = _serve(local_engine, tmp_path)
    with server as proc:
        wait_for_port(port, 60, proc)
        page, screen = _open_console(browser, f"http://127.0.0.1:{port}/", size=(800, 600))
        assert screen["rows"] <= 36, screen  # the size the layout is checked at
        _wait(page, "the engine ready", lambda t: re.search(r"local\s+builtin\s+ready", t), 120)
        _view(page, "p", "Prompt lab", lambda t: "Run prompt (r)" in t)
        _fill(page, "max tokens", "24")
        _fill(page, "repeat", "3")
        _click_text(page, "Run prompt (r)")
        text = _wait(page, "the run's results", lambda t: "3 request(s), stored as run" in t, 300)
        page.screenshot(path=str(tmp_path / "prompt-800x600.png"))
        lines = text.split("\n")
        pooled = [line for line in lines if re.search(r"code\s+256\s+n=3\s+\d", line)]
        interval = r"\d+\.\d–\d+\.\d\s+\d+\.\d\d–\d+\.\d\d\s+\d+\.\d\d–\d+\.\d\d"
        ci = [line for line in lines if re.search(rf"95% CI\s+{interval}", line)]
        raw = [line for line in lines if re.search(r"code\s+256\s+24/24\s", line)]
        assert len(pooled) == 1 and len(ci) == 1, text
        assert len(raw) == 3, f"{len(raw)} of 3 raw rows in view:\n{text}"
        assert lines.index(pooled[0]) < lines.index(ci[0]) < lines.index(raw[0]), text
        page.close()
    assert proc.returncode is not None
