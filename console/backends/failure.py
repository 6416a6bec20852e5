"""The root cause of a failed start, from the engine's log: the first fatal or ERROR line of
the failing process, not the last lines (a multi-process engine such as vLLM ends its log
with the API server's "Engine core initialization failed. See root cause above").

Without a logged error, the last exception line of a traceback stands in (an engine that
dies before its logging is set up prints only that).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Levels as logging prints them (`ERROR 12-01 10:00:00 [core.py:1] ...`, `[...] ERROR ...`),
# and the interpreter's own last words.
_FATAL = re.compile(r"Fatal Python error|\b(?:ERROR|CRITICAL|FATAL)\b")
_EXCEPTION = re.compile(r"^(?:\(\S+ pid=\d+\)\s*)?[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b: ")
MAX_LEN = 300


def _clean(line: str) -> str:
    text = line.split("\r")[-1].strip()
    return text if len(text) <= MAX_LEN else text[: MAX_LEN - 3] + "..."


def root_cause(lines: Sequence[str]) -> str:
    for line in lines:
        if _FATAL.search(line):
            return _clean(line)
    for line in reversed(lines):
        if _EXCEPTION.match(line.strip()):
            return _clean(line)
    return ""


def exception_after(lines: Sequence[str], first: str) -> str:
    """The exception line that ends the traceback following the root-cause line (the
    failing process's own words about what went wrong), or ""."""
    try:
        start = next(i for i, line in enumerate(lines) if _clean(line) == first)
    except StopIteration:
        return ""
    for line in lines[start + 1 :]:
        body = re.sub(r"^(?:\(\S+ pid=\d+\)\s*)?(?:ERROR\s+\S+\s+\S+\s+\[[^\]]*\]\s*)?", "", line)
        if _EXCEPTION.match(body.strip()):
            return _clean(body)
    return ""
