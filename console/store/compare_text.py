"""A run comparison as text: the one rendering `history compare` prints and the TUI's
history screen shows, so both faces say the same thing about the same two runs."""

from __future__ import annotations

from collections.abc import Callable

from console.measure import format as fmt
from console.store.compare import RunComparison, RunHeader

# figure -> (label, formatter) in the compare table
FIGURE_TEXT: dict[str, tuple[str, Callable[[float | None], str]]] = {
    "decode_tok_s": ("tok/s", fmt.tok_s),
    "commit_len": ("commit", fmt.commit),
    "step_time_s": ("step ms", fmt.step_ms),
    "ttft_s": ("TTFT ms", fmt.ttft_ms),
}


def comparison_lines(result: RunComparison) -> list[str]:
    """Headers, the flags diff, a row per figure per shared point, and what only one run
    measured."""
    lines = [_header_line("A", result.a), _header_line("B", result.b)]
    lines += _flags_lines(result)
    lines.append("")
    if result.points:
        rows = [
            (
                str(point.context_tokens),
                point.text_type,
                FIGURE_TEXT[pair.name][0],
                FIGURE_TEXT[pair.name][1](pair.a),
                FIGURE_TEXT[pair.name][1](pair.b),
                fmt.percent_change(pair.change.percent if pair.change else None),
                f"{point.n_a}/{point.n_b}",
            )
            for point in result.points
            for pair in point.figures
        ]
        headers = ("CONTEXT", "TEXT", "FIGURE", "A", "B", "CHANGE", "N A/B")
        lines.append("medians of unflagged samples, per point measured by both runs:")
        lines.append(fmt.table(headers, rows, right={0, 3, 4, 5, 6}))
    else:
        lines.append("No (context, text type) point was measured by both runs.")
    for side, only in (("A", result.only_a), ("B", result.only_b)):
        if only:
            points = ", ".join(f"{context} {text}" for context, text in only)
            lines.append(f"only in {side}: {points}")
    return lines


def _header_line(side: str, h: RunHeader) -> str:
    version = f" {h.engine_version}" if h.engine_version else ""
    return (
        f"{side}: run {h.id}, {h.method} on {h.host}, {h.engine}{version}, {h.status}, "
        f"started {fmt.when(h.started_at)}, flags {h.flags_hash}, {h.samples} samples"
        + (f" ({h.flagged} flagged, left out)" if h.flagged else "")
    )


def _flags_lines(result: RunComparison) -> list[str]:
    diff = result.flags
    if diff.same:
        return ["same flags in A and B"]
    v = fmt.value
    return [
        "flags A -> B:",
        *(f"  --{k}: {v(a)} -> {v(b)}" for k, (a, b) in diff.changed.items()),
        *(f"  --{k}: (unset) -> {v(x)}" for k, x in diff.added.items()),
        *(f"  --{k}: {v(x)} -> (unset)" for k, x in diff.removed.items()),
    ]
