"""How every figure is written as text: one function per kind of number.

The CLI's tables, the TUI's tables and texts, and the run store's human output all call
these, so a figure reads the same everywhere: "105.3" tok/s in `history show` is "105.3"
on the dashboard, never "105" in one place and "105.30" in another. A missing figure is
always "-". Machine output (`--json`, CSV, JSON exports) keeps the raw numbers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.analysis.intervals import Interval
    from console.analysis.stats import Spread

MISSING = "-"

# (format spec, scale) per kind of figure; Spread.text and the tables both read these.
TOK_S = (".1f", 1.0)
COMMIT = (".2f", 1.0)
STEP_MS = (".2f", 1000.0)  # seconds in, milliseconds out
TTFT_MS = (".1f", 1000.0)
RATIO = (".4f", 1.0)


def num(value: float | None, spec: str, scale: float = 1.0) -> str:
    """`value * scale` formatted with `spec`; "-" when missing."""
    if value is None:
        return MISSING
    return format(value * scale if scale != 1.0 else value, spec)


def tok_s(value: float | None) -> str:
    return num(value, *TOK_S)


def commit(value: float | None) -> str:
    return num(value, *COMMIT)


def step_ms(seconds: float | None) -> str:
    return num(seconds, *STEP_MS)


def ttft_ms(seconds: float | None) -> str:
    return num(seconds, *TTFT_MS)


def count(value: int | None) -> str:
    return num(value, "d")


def percent_change(percent: float | None) -> str:
    """A change already in percent: "+20.0%"; "-" when there is none."""
    return MISSING if percent is None else f"{percent:+.1f}%"


def ratio_change(ratio: float | None) -> str:
    """A ratio new / old as a whole-percent change: 1.2 -> "+20%" (verdict-style)."""
    return MISSING if ratio is None else f"{(ratio - 1) * 100:+.0f}%"


def spread(value: Spread | None, figure: tuple[str, float] = TOK_S) -> str:
    """Median with the lowest-highest range over repeats: "105.3 [98.1–110.0]"."""
    if value is None:
        return MISSING
    spec, scale = figure
    med = num(value.median, spec, scale)
    if value.n < 2:
        return med
    return f"{med} [{num(value.low, spec, scale)}–{num(value.high, spec, scale)}]"


def interval(value: Interval | None, figure: tuple[str, float] = TOK_S) -> str:
    """A pooled figure with its 95% interval: "105.3 [98.1–110.0]"; just the value when
    the interval is the point (one request, or requests that all agree)."""
    if value is None:
        return MISSING
    spec, scale = figure
    v, lo, hi = (num(x, spec, scale) for x in (value.value, value.low, value.high))
    return v if lo == hi == v else f"{v} [{lo}–{hi}]"


def duration(seconds: float | None) -> str:
    """A run's length: "3m05s", or "1h02m" from an hour on."""
    if seconds is None:
        return MISSING
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def age(seconds: float) -> str:
    """How old a sample is: "4 s old"."""
    return f"{max(0.0, seconds):.0f} s old"


def when(t: float | None, *, seconds: bool = True) -> str:
    """A local date and time; without seconds where a table column is narrow."""
    if t is None:
        return MISSING
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", time.localtime(t))


def clock(t: float) -> str:
    """A live sample's time of day to a tenth of a second: "14:03:07.4"."""
    return f"{time.strftime('%H:%M:%S', time.localtime(t))}.{int(t * 10) % 10}"


def value(v: Any) -> str:
    """A flag or parameter value: strings as they are, anything else as JSON."""
    return v if isinstance(v, str) else json.dumps(v, default=str)


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], right: set[int]) -> str:
    """Columns padded to their widest cell, two spaces apart; `right` columns (numbers)
    aligned right."""
    rows = list(rows)
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = (
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])
