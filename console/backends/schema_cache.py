"""Discovered flag schemas kept on this machine, so `flags` and `set` do not rebuild them.

Building an engine's parser imports the engine (SGLang and vLLM take 5-15 s, most of it
torch); the result only changes when the engine does. An entry is keyed by host, engine
kind and interpreter, and holds the fingerprint it was made under (engine version, the
stat of the module that declares the flags, the interpreter's version): a cheap check on
the host that imports nothing decides whether it still holds, so an upgraded or edited
engine is asked again and a stale schema is never used.

The directory is `$SPECCONSOLE_CACHE_DIR`, else `cache/` under `$SPECCONSOLE_CONFIG_DIR`
(tests and CI point that at a temp dir), else the user cache dir.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import platformdirs

FORMAT = 1


def cache_dir() -> Path:
    if explicit := os.environ.get("SPECCONSOLE_CACHE_DIR"):
        return Path(explicit)
    if config := os.environ.get("SPECCONSOLE_CONFIG_DIR"):
        return Path(config) / "cache"
    return Path(platformdirs.user_cache_dir("specconsole"))


def _path(host: str, kind: str, interpreter: list[str]) -> Path:
    key = json.dumps([host, kind, interpreter])
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return cache_dir() / "schemas" / f"{kind}-{digest}.json"


def load(host: str, kind: str, interpreter: list[str], fingerprint: dict) -> dict | None:
    """The cached entry if it was made under this exact fingerprint, else None."""
    try:
        entry = json.loads(_path(host, kind, interpreter).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    if entry.get("fingerprint") != fingerprint:
        return None
    return entry


def save(
    host: str, kind: str, interpreter: list[str], fingerprint: dict, payload: dict[str, Any]
) -> None:
    """Write an entry atomically; a cache that cannot be written only costs time later."""
    path = _path(host, kind, interpreter)
    entry = {"format": FORMAT, "fingerprint": fingerprint, **payload}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as out:
            json.dump(entry, out)
        os.replace(tmp, path)
    except OSError:
        return
