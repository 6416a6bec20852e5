"""The console's themes: TOML files of Textual `Theme` fields, found wherever we run.

They live in `themes/` at the repository root so designers edit data, not Python. A
checkout (or editable install) reads that folder; a wheel carries the same files as data
files under `<prefix>/share/specconsole/themes` (see pyproject.toml), because the folder
is not a Python package. Users can add their own in `<config dir>/themes/*.toml`.
`use_themes` registers them on the app, picks the wanted one and remembers each change.
"""

from __future__ import annotations

import site
import sys
import sysconfig
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from textual.app import App
from textual.theme import Theme

from console.config import config_dir
from console.errors import ConfigError
from console.tui.settings import save_theme

SHARE = Path("share") / "specconsole" / "themes"


def theme_dirs() -> list[Path]:
    """Where theme files are looked for, later folders overriding earlier ones."""
    candidates = [Path(__file__).resolve().parents[2] / "themes"]  # a checkout
    prefixes = {sys.prefix, sysconfig.get_paths().get("data", sys.prefix)}
    if site.USER_BASE:
        prefixes.add(site.USER_BASE)
    candidates += [Path(p) / SHARE for p in sorted(prefixes)]
    candidates.append(config_dir() / "themes")
    return [d for d in candidates if d.is_dir()]


_FIELDS = {f.name for f in fields(Theme)}


def parse_theme(path: Path) -> Theme:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Theme file {path} cannot be read: {exc}.") from None
    data.setdefault("name", path.stem)
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ConfigError(f"Theme file {path} has unknown keys: {', '.join(unknown)}.")
    if "primary" not in data:
        raise ConfigError(f"Theme file {path} needs at least a `primary` colour.")
    try:
        return Theme(**data)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Theme file {path} is invalid: {exc}.") from None


def load_themes() -> dict[str, Theme]:
    themes: dict[str, Theme] = {}
    for folder in theme_dirs():
        for path in sorted(folder.glob("*.toml")):
            theme = parse_theme(path)
            themes[theme.name] = theme
    return themes


def use_themes(app: App, requested: str | None, remembered: str) -> None:
    """Register every theme, use `requested` (or the remembered one), and remember the
    theme whenever the user changes it; an unknown name falls back to dark, saying so."""
    for theme in load_themes().values():
        app.register_theme(theme)
    wanted = requested or remembered
    if wanted not in app.available_themes:
        names = ", ".join(sorted(app.available_themes))
        app.notify(f"No theme named {wanted!r}; using dark (known: {names}).", severity="error")
        wanted = "dark" if "dark" in app.available_themes else "textual-dark"
    app.theme = wanted
    if requested and wanted == requested:
        save_theme(wanted)

    def remember(theme: Any) -> None:
        try:
            save_theme(theme.name)
        except OSError as exc:
            app.notify(f"Could not remember the theme: {exc}.", severity="warning")

    app.theme_changed_signal.subscribe(app, remember)


def next_theme(app: App) -> str:
    """The theme after the current one: ours first (dark, light, high-contrast)."""
    ours = [n for n in ("dark", "light", "high-contrast") if n in app.available_themes]
    names = ours or sorted(app.available_themes)
    current = names.index(app.theme) if app.theme in names else -1
    return names[(current + 1) % len(names)]
