"""A run comparison as text: the one rendering `history compare` prints and the TUI's
history screen shows, so both faces say the same thing about the same two runs."""

from __future__ import annotations

from console.analysis import format as fmt
from console.store.compare import RunComparison, RunHeader

# figure -> (label, (format spec, scale)) in the compare table
FIGURE_TEXT: dict[str, tuple[str, tuple[str, float]]] = {
    "decode_tok_s": ("tok/s", fmt.TOK_S),
    "commit_len": ("commit", fmt.COMMIT),
    "step_time_s": ("step ms", fmt.STEP_MS),
    "ttft_s": ("TTFT ms", fmt.TTFT_MS),
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
                fmt.interval(pair.a_interval, FIGURE_TEXT[pair.name][1]),
                fmt.interval(pair.b_interval, FIGURE_TEXT[pair.name][1]),
                pair.change_text(),
                f"{point.n_a}/{point.n_b}",
            )
            for point in result.points
            for pair in point.figures
        ]
        headers = ("CONTEXT", "TEXT", "FIGURE", "A", "B", "CHANGE", "N A/B")
        lines.append(
            "per point measured by both runs, over unflagged samples: tok/s, commit and step "
            "pooled (tokens / steps / decode time) over the passages both read, paired by "
            "passage, TTFT the mean; each run's figure [95% interval], a change paired by "
            "passage [99% over all rows together] (else resampled per run [95%]); a change is "
            "a finding only when its interval excludes no change"
        )
        lines.append(fmt.table(headers, rows, right={0, 3, 4, 6}))
        lines.append(result.drift.text())
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
        f"started {fmt.when(h.started_at)}, flags {h.flags_hash}, sampling {h.sampling}, "
        f"{h.samples} samples" + (f" ({h.flagged} flagged, left out)" if h.flagged else "")
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
