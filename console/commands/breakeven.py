"""`specconsole breakeven HOST --contexts ...`: where does speculation stop paying?

Thin over `console.experiments.breakeven`: it restarts the engine with speculation off and
back (through the normal apply path) and prints, per context, both step times, the
commit length needed to break even, the commit measured and the speedup, each with an
interval; or `--json`.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.commands.base import HostCommand, ints
from console.commands.restoring import add_restart_options, run_restoring
from console.experiments.breakeven import (
    LEVEL,
    RESAMPLES,
    BreakevenResult,
    run_breakeven,
    table_lines,
)


def print_breakeven(result: BreakevenResult, host: str) -> None:
    p = result.params
    for line in table_lines(result.rows):
        print(line)
    print(
        f"  needed = spec step / AR step; speedup = measured / needed = spec tok/s / AR tok/s. "
        f"{p['output_tokens']} tokens of {p['text_type']} text per request at "
        f"{p.get('sampling', 'greedy')}, "
        f"{p['repeat']} request(s) per arm and context; pooled figures (sum of tokens / "
        f"steps / decode time), engine-side decode time; [{LEVEL:.0%} bootstrap over "
        f"requests, {RESAMPLES} resamples, seed {p['seed']}]"
    )
    print_restart_footer(result)


def print_restart_footer(result: Any) -> None:
    """How speculation was switched off, whether the flags came back, and the stored run:
    the last lines of every run that restarts without speculation (breakeven, load)."""
    if result.off_changes:
        off = ", ".join(f"{k}={'' if v is None else v}" for k, v in result.off_changes.items())
        state = "restored" if result.restored else "NOT restored"
        print(f"  speculation off with {off}; original flags {state}; took {result.seconds:.0f} s")
    if result.run_id is not None:
        print(f"(stored as run {result.run_id}; `specconsole history show {result.run_id}`)")


async def cmd_breakeven(args: argparse.Namespace) -> int:
    async def run(session, tick):
        return await run_breakeven(
            session, contexts=args.contexts, output_tokens=args.output,
            text_type=args.text, repeat=args.repeat, seed=args.seed,
            timeout=args.timeout, tick=tick,
        )  # fmt: skip

    return await run_restoring(args, "breakeven", run, lambda r: print_breakeven(r, args.host))


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `breakeven` to the `specconsole` parser."""
    p = host_command(
        "breakeven",
        "Speculation on vs off per context: commit needed to break even, measured, speedup.",
    )
    p.add_argument(
        "--contexts", type=ints, required=True, help="prompt lengths in tokens, e.g. 64,1k,1900"
    )
    p.add_argument("--output", type=int, default=128, help="output tokens per request")
    p.add_argument("--text", default="code", help="text type (code, prose, repetitive)")
    p.add_argument("--repeat", type=int, default=3, help="requests per arm and context")
    add_restart_options(p)
    p.set_defaults(func=cmd_breakeven)
