"""Where the run history lives: one SQLite file in the user data dir.

The data dir is platformdirs' user data dir for "specconsole", or `$SPECCONSOLE_DATA_DIR`
(tests and CI point it at a temp dir, so no test reads or writes a user's real history).
The file is local on purpose: SQLite's WAL mode, which lets a `watch` and a sweep write
at once, needs shared memory and does not work on a network filesystem.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

HISTORY_FILE = "history.sqlite"


def data_dir() -> Path:
    override = os.environ.get("SPECCONSOLE_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir("specconsole"))


def default_history_path() -> Path:
    return data_dir() / HISTORY_FILE
