"""Fixtures for the TUI tests: an isolated config dir and HOME, no cursor blink."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # No test may read or write the developer's profiles, tui.toml, ~/.ssh/config or run history.
    cfg = tmp_path / "config"
    monkeypatch.setenv("SPECCONSOLE_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SPECCONSOLE_DATA_DIR", str(tmp_path / "data"))  # the run history
    # A blinking cursor would make two snapshots of one screen differ.
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
    return cfg
