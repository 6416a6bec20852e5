"""Fixtures for the TUI tests: an isolated HOME, no cursor blink."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input


@pytest.fixture(autouse=True)
def _isolated_home(_isolated_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The console's conftest isolates profiles and run history; the TUI also reads
    # ~/.ssh/config (the host picker), so HOME is the test's own too.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # A blinking cursor would make two snapshots of one screen differ.
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
    return _isolated_config
