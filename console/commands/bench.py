"""`specconsole bench ...`: the one place its subcommands are registered.

Each benchmark's options and command live with its area (`tui` with the web/TUI commands,
`fidelity` with the measuring commands, `verdict` with the verdict bench); this module
builds the `bench` group and names every member, so `specconsole bench --help` and this
list are the same thing.
"""

from __future__ import annotations

import argparse

from console.commands import coverage_bench, measure, verdict_bench, web
from console.commands.base import HostCommand, Parser

SUBCOMMANDS = (
    web.add_bench_tui,
    measure.add_bench_fidelity,
    verdict_bench.add_bench_verdict,
    coverage_bench.add_bench_coverage,
)


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `bench tui|fidelity|verdict|coverage` to the `specconsole` parser."""
    bench = sub.add_parser(
        "bench",
        help="Benchmarks of the console itself and of measurements.",
        description="Benchmarks of the console itself and of measurements.",
    )
    group = bench.add_subparsers(dest="bench_what", required=True, parser_class=Parser)
    for add in SUBCOMMANDS:
        add(group)
