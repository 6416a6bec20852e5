"""The TUI's one typed settings object, read from `<config dir>/tui.toml`.

One file for everything the console's terminal view remembers or lets users change:
the theme (written back when the user picks another), key remaps (a `[keys]` table,
binding id -> keys, e.g. `dashboard = "1"`), and the timings that would otherwise be
scattered through screens (status poll, chart redraw rate, log buffer). Validation is
strict, like host profiles: a typo is an error with one sentence, not a silent default.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import tomli_w
from pydantic import ConfigDict, Field, ValidationError

from console.config import config_dir, format_validation_error
from console.errors import ConfigError
from console.settings import ConsoleSettings

DEFAULT_THEME = "dark"


class TuiSettings(ConsoleSettings):
    """The core's timings (`ConsoleSettings`) plus what only the terminal view uses."""

    model_config = ConfigDict(extra="forbid")

    theme: str = DEFAULT_THEME
    keys: dict[str, str] = Field(default_factory=dict)  # binding id -> "key" or "k1,k2"
    status_poll_s: float = Field(default=2.0, gt=0)  # how often the service state is read
    link_timeout_s: float = Field(default=10.0, gt=0)  # a status read slower = link down
    chart_hz: float = Field(default=2.0, gt=0, le=10)  # chart redraws per second at most
    log_buffer: int = Field(default=5000, ge=100)  # log lines kept for re-filtering
    log_backlog: int = Field(default=200, ge=0)  # lines shown when the log view opens


def settings_path() -> Path:
    return config_dir() / "tui.toml"


def load_settings(path: Path | None = None) -> TuiSettings:
    path = path or settings_path()
    if not path.exists():
        return TuiSettings()
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"TUI settings file {path} is not valid TOML: {exc}.") from None
    try:
        return TuiSettings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(f"TUI settings file {path}", exc)) from None


def save_theme(name: str, path: Path | None = None) -> None:
    """Remember the chosen theme, keeping the file's other settings."""
    path = path or settings_path()
    data: dict = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError:
            data = {}
    data["theme"] = name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(tomli_w.dumps(data))
    os.replace(tmp, path)
