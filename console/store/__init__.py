"""Run history: every measurement run and sample in SQLite, and its exports.

`RunStore` is what the measurement core writes to and the CLI and TUI read from;
`compare`, `export_csv` and `export_json` work on the `StoredRun`s it returns.
"""

from console.store.compare import compare
from console.store.errors import HistoryError
from console.store.export import export_csv, export_json
from console.store.paths import data_dir, default_history_path
from console.store.runs import RunStore, StoredRun

__all__ = [
    "HistoryError",
    "RunStore",
    "StoredRun",
    "compare",
    "data_dir",
    "default_history_path",
    "export_csv",
    "export_json",
]
