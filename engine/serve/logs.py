"""Server log lines in SGLang's formats, on stdout, flushed per line.

SGLang's logger format is `[%(asctime)s] %(message)s` with `%Y-%m-%d %H:%M:%S`; the loading
progress lines are tqdm bars printed without that prefix. The console's log parsers (and
anyone's journal greps) read these lines, so the wording follows SGLang's.
"""

from __future__ import annotations

import logging
import sys
import time

LOG_FORMAT = "[%(asctime)s] %(message)s"
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
READY_MESSAGE = "The server is fired up and ready to roll!"

logger = logging.getLogger("specengine.server")


class _FlushingHandler(logging.StreamHandler):
    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        self.flush()


POLLED_PATHS = ("/metrics", "/health")


class _QuietPolling(logging.Filter):
    """Drop access lines of successful polls: a console scraping /metrics every 2 s (or
    waiting on /health) would otherwise bury the engine's own log in them. A failed poll
    still logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5:  # uvicorn: client, method, path, ver, status
            path, status = str(args[2]).split("?")[0], args[4]
            return not (path in POLLED_PATHS and status == 200)
        return True


def setup_logging(level: str = "info", stream=None) -> None:
    """Route our loggers and uvicorn's through one stdout handler in SGLang's format."""
    handler = _FlushingHandler(stream or sys.stdout)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, DATE_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
        lg.setLevel(level.upper())
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _QuietPolling) for f in access.filters):
        access.addFilter(_QuietPolling())


class ShardProgress:
    """`on_shard(done, total)` callback printing tqdm-style SGLang loading lines.

    load_bundle reports the target's shards, then the drafter's, each counting from 1, so
    a count that goes back to 1 starts a new bar (SGLang also prints one bar per model).
    """

    def __init__(self, stream=None, label: str = "Loading safetensors checkpoint shards"):
        self.stream = stream or sys.stdout
        self.label = label
        self.started = time.perf_counter()
        self.last_done = 0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done <= self.last_done:
            self.started = now
        self.last_done = done
        elapsed = now - self.started
        per = elapsed / done if done else 0.0
        remaining = per * (total - done)
        pct = 100.0 * done / total if total else 100.0
        line = (
            f"{self.label}: {pct:3.0f}% Completed | {done}/{total} "
            f"[{_mmss(elapsed)}<{_mmss(remaining)}, {per:5.2f}s/it]"
        )
        self.stream.write(line + "\n")
        self.stream.flush()


def _mmss(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60:02d}:{s % 60:02d}"
