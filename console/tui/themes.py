"""The console's themes: TOML files of Textual `Theme` fields, found wherever we run.

They live in `themes/` at the repository root so designers edit data, not Python. A
checkout (or editable install) reads that folder; a wheel carries the same files as data
files under `<prefix>/share/specconsole/themes` (see pyproject.toml), because the folder
is not a Python package. Users can add their own in `<config dir>/themes/*.toml`.
"""

from __future__ import annotations

import site
import sys
import sysconfig
import tomllib
from dataclasses import fields
from pathlib import Path

from textual.theme import Theme

from console.config import config_dir
from console.errors import ConfigError

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
