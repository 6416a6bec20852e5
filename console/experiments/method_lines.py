"""The two-point and stream-check results as lines of text, for every front end.

`specconsole twopoint` and `streamcheck` print these lines and the TUI's sweeps view shows
the same ones, so both read `MethodResult.figures` the same way, each figure with its
interval, and neither holds arithmetic of its own (the figures and intervals are computed
in `measure.methods` and `analysis/two_point.py`).
"""

from __future__ import annotations

from typing import Any

from console.analysis.intervals import Interval
from console.measure.methods import MethodResult

STREAM_FIGURES = (
    ("streamed, client-side", "stream_client_tok_s"),
    ("streamed, engine's figure", "stream_server_tok_s"),
    ("not streamed, engine's figure", "plain_tok_s"),
)


def interval_text(figures: dict[str, Any], key: str) -> str:
    """A figure's value and 95% interval in tok/s, "-" when it has none."""
    data = (figures.get("intervals") or {}).get(key) or figures.get(key)
    if not isinstance(data, dict):
        return "-"
    return Interval.from_dict(data).text("{:.1f}") + " tok/s"


def two_point_lines(result: MethodResult, n1: int, n2: int) -> list[str]:
    """The two-point figure, the server's and the whole request's, and why they differ."""
    f = result.figures
    if f.get("twopoint_tok_s") is None:
        return [f"two-point: no result ({f.get('error', 'T(N2) was not above T(N1)')})"]
    lines = [
        f"two-point decode: {interval_text(f, 'twopoint_tok_s')} = ({n2} - {n1}) tokens / "
        f"(T({n2}) - T({n1})), medians of {f['pairs']} pairs, client wall time [95% interval]"
    ]
    if f["pairs"] < 2:
        lines.append("  one pair has no spread to resample: no interval; --repeat 3 gives one")
    if f.get("server_tok_s"):
        lines.append(f"server decode time, same tokens: {interval_text(f, 'server_tok_s')} "
                     f"({f['agreement']:+.1%} client vs server)")  # fmt: skip
    if f.get("whole_request_tok_s"):
        lines.append(f"whole-request decode (N={n2}, server, tokens 1..{n2}): "
                     f"{interval_text(f, 'whole_request_tok_s')}")  # fmt: skip
    gap = (f.get("intervals") or {}).get("gap")
    if gap:
        g = Interval.from_dict(gap)
        lines.append(f"two-point (tokens {n1}..{n2}) / whole request: x{g.value:.2f} "
                     f"[{g.low:.2f}–{g.high:.2f}]")  # fmt: skip
    spans = f.get("spans")
    if spans:
        lines.append(f"  commit {spans['first_commit']:.2f} over the first {n1} tokens, "
                     f"{spans['later_commit']:.2f} over {n1}..{n2}")  # fmt: skip
    lines += [f"  why: {reason}" for reason in f.get("gap_reasons", ())]
    return lines


def stream_check_lines(result: MethodResult) -> list[str]:
    """Streamed and plain figures with their intervals, and the verdict on the link."""
    f = result.figures
    lines = [f"{label:<32}{interval_text(f, key)} (median [95% interval])"
             for label, key in STREAM_FIGURES if f.get(key)]  # fmt: skip
    lines.append(f.get("verdict", "no verdict: the streamed or the plain requests gave no figure"))
    return lines
