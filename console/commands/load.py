"""`specconsole load HOST --concurrency 1,2,4,8`: does speculation still pay under load?

Thin over `console.experiments.load`: N requests at once at each level, with speculation
on and off (the engine restarts through the normal apply path and comes back), and prints
per level both arms' per-stream and aggregate tok/s, commit and step time, the speedup
with its interval, and the concurrency at which speculation stops paying; or `--json`.
"""

from __future__ import annotations

import argparse

from console.analysis.load_format import table_lines
from console.commands.base import (
    HostCommand,
    ints,
)
from console.commands.breakeven import print_restart_footer
from console.commands.restoring import add_restart_options, run_restoring
from console.experiments.load import LEVELS, LoadResult, run_load


def print_load(result: LoadResult) -> None:
    p = result.params
    if result.table is not None:
        for line in table_lines(result.table):
            print(line)
    print(
        f"  {p['waves']} wave(s) a level: N requests of {p['output_tokens']} tokens of "
        f"{p['text_type']} text at context {p['context']} ({p.get('sampling', 'greedy')}) "
        "sent at once, each on its own "
        "passage (the same ones in both arms); per stream: pooled decode tokens / decode "
        "time; aggregate: output tokens / the wave's wall time; "
        f"[{result.summary()['interval']}; drift: {result.drift_source}]"
    )
    print_restart_footer(result)


async def cmd_load(args: argparse.Namespace) -> int:
    async def run(session, tick):
        return await run_load(
            session, concurrency=args.concurrency, context=args.context,
            text_type=args.text, output_tokens=args.output, waves=args.waves,
            spec_only=args.spec_only, seed=args.seed, timeout=args.timeout, tick=tick,
        )  # fmt: skip

    return await run_restoring(args, "load", run, print_load)


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `load` to the `specconsole` parser."""
    p = host_command(
        "load",
        "Speculation on vs off at several concurrencies: per-stream and aggregate tok/s, "
        "commit, step time, and where speculation stops paying.",
    )
    p.add_argument("--concurrency", type=ints, default=list(LEVELS),
                   help="requests at once, e.g. 1,2,4,8 (the default)")  # fmt: skip
    p.add_argument("--context", type=int, default=512, help="prompt length in tokens")
    p.add_argument("--output", type=int, default=64, help="output tokens per request")
    p.add_argument("--text", default="code", help="text type (code, prose, repetitive)")
    p.add_argument("--waves", type=int, default=3, help="waves of N requests per level and arm")
    p.add_argument(
        "--spec-only", action="store_true",
        help="the configured flags only: no speculation-off arm, no restart",
    )  # fmt: skip
    add_restart_options(p)
    p.set_defaults(func=cmd_load)
