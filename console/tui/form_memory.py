"""What was typed into a view's form, remembered per host across sessions.

A reconnect (a dropped link, a reloaded browser page, the console started again) builds
the views anew; without this the sweep form would fall back to its defaults and the
operator would retype the contexts and repeat they were tuning. One small JSON file in
the config dir, written atomically; an unreadable file is treated as empty, since
losing remembered form values is harmless.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from console.config import config_dir


def forms_path() -> Path:
    return config_dir() / "tui-forms.json"


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_form(host: str, form: str) -> dict[str, str]:
    values = _read(forms_path()).get(host, {}).get(form, {})
    return (
        {k: v for k, v in values.items() if isinstance(v, str)} if isinstance(values, dict) else {}
    )


def save_form(host: str, form: str, values: dict[str, str]) -> None:
    path = forms_path()
    data = _read(path)
    data.setdefault(host, {})[form] = values
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass  # remembering is a convenience; the run itself goes on
