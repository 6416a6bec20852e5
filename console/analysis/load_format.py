"""The load table as aligned text: the CLI prints it, the history shows a stored run's,
and the TUI's Sweeps view shows it under its chart."""

from __future__ import annotations

from console.analysis.load_table import LoadLevel, LoadTable


def _level_cells(level: LoadLevel | None) -> str:
    if level is None:
        return f"{'-':<21}{'-':<21}{'-':<17}{'-':<21}"
    commit = level.commit.text() if level.commit else "-"
    return (
        f"{level.stream_tok_s.text('{:.0f}'):<21}{level.aggregate_tok_s.text('{:.0f}'):<21}"
        f"{commit:<17}{level.step_s.text('{:.2f}', 1000):<21}"
    )


def table_lines(table: LoadTable) -> list[str]:
    """One line per concurrency and arm, the speedup and whether speculation pays on the
    speculative arm's line, then the break-even concurrency."""
    lines = [
        f"{'conc':>4}  {'arm':<5}{'tok/s per stream':<21}{'tok/s aggregate':<21}"
        f"{'commit':<17}{'step ms':<21}{'speedup':<19}pays"
    ]
    for row in table.rows:
        speedup = row.speedup.text() if row.speedup else "-"
        lines.append(f"{row.concurrency:>4}  {'spec':<5}{_level_cells(row.spec)}"
                     f"{speedup:<19}{row.pays_text if row.speedup else '-'}")  # fmt: skip
        if row.ar is not None:
            lines.append(f"{'':>4}  {'AR':<5}{_level_cells(row.ar)}")
    if table.breakeven is not None:
        lines.append(f"  {table.breakeven.text()}")
    if any(r.speedup is not None and r.pays is None for r in table.rows):
        lines.append(
            "  not sure: the speedup's interval holds 1 (or one wave a level gives it none); "
            "more waves (--waves) narrow it"
        )
    return lines
