"""`specconsole bench coverage [HOST]`: do the verdict's 95% intervals hold on passages
the sweep never read?

Thin over `console.experiments.coverage_bench`: a default model sweep, then held-out
requests on other passages of the same texts at every point, then the sweep's passages
again; prints per point the share of held-out figures inside the point's band (with its
Wilson interval, against the 92-98% a 95% interval should hold), the same for a
timing-only band, and whether the paired re-read holds "no change"; or `--json`.
"""

from __future__ import annotations

import argparse
import json

from console.commands.base import (
    EXIT_FAILED,
    ints,
    measure_session,
    names,
    progress,
    with_service,
)
from console.experiments.coverage_bench import (
    CONTEXTS,
    HELD_OUT,
    OUTPUT,
    TEXT_TYPES,
    CoverageResult,
    run_coverage,
)
from console.service import EngineService


def print_coverage(result: CoverageResult) -> None:
    for line in result.table():
        print(line)
    p = result.params
    parts = ", ".join(f"{k} {v:.0f} s" for k, v in result.timings.items())
    print(f"  sweep: {p['sweep_requests']} requests on passages 0-{p['sweep_passages'] - 1}; "
          f"held out: {p['held_out']} requests a point on passages {p['windows'][0]}-"
          f"{p['windows'][1]}, one each; {p['output_tokens']} tokens a request; "
          f"took {result.seconds:.0f} s ({parts})")  # fmt: skip


async def cmd_bench_coverage(args: argparse.Namespace) -> int:
    args.no_store = True

    async def body(service: EngineService) -> int:
        session = measure_session(service, args)
        with progress(args, "coverage benchmark") as tick:
            result = await run_coverage(
                session, contexts=args.contexts, text_types=args.text, held_out=args.held_out,
                output_tokens=args.output, reread=not args.no_reread, seed=args.seed, tick=tick,
                calibrate=not args.no_calibrate, timeout=args.timeout,
            )  # fmt: skip
        if args.save:
            with open(args.save, "w") as fh:
                json.dump(result.as_dict(), fh, indent=2, default=str)
        if args.json:
            print(json.dumps(result.as_dict(), indent=2, default=str))
        else:
            print_coverage(result)
        return 0 if result.n else EXIT_FAILED

    return await with_service(args, body)


def add_bench_coverage(bench: argparse._SubParsersAction) -> None:
    """`specconsole bench coverage [HOST]` (registered by console.commands.bench)."""
    p = bench.add_parser(
        "coverage",
        help="How often the verdict's 95% intervals hold figures on passages a sweep never read.",
        description="Sweep HOST's engine as `sweep` does by default, measure other passages "
        "of the same texts at every point, and report per point the share of those figures "
        "inside the point's 95% band (target 92-98%), beside a timing-only band; then read "
        "the sweep's passages again and check the paired comparison holds no change.",
    )
    p.add_argument("host", nargs="?", default="local", help="profile or host (default local)")
    p.add_argument("--contexts", type=ints, default=list(CONTEXTS),
                   help=f"prompt lengths (default {','.join(map(str, CONTEXTS))})")  # fmt: skip
    p.add_argument("--text", type=names, default=list(TEXT_TYPES),
                   help=f"text types (default {','.join(TEXT_TYPES)})")  # fmt: skip
    p.add_argument(
        "--held-out",
        type=int,
        default=HELD_OUT,
        help=f"held-out requests a point, one passage each (default {HELD_OUT})",
    )
    p.add_argument("--output", type=int, default=OUTPUT, help=f"output tokens (default {OUTPUT})")
    p.add_argument("--no-reread", action="store_true", help="skip the paired null")
    p.add_argument("--no-calibrate", action="store_true",
                   help="skip the host's calibration first (no drift term then)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds to wait for each calibration restart")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the bands' draws")
    p.add_argument("--accept-new-host-key", action="store_true",
                   help="trust an unknown SSH host key without asking")  # fmt: skip
    p.add_argument("--json", action="store_true", help="machine-readable output only")
    p.add_argument("--save", metavar="FILE", help="also write the JSON to FILE")
    p.set_defaults(func=cmd_bench_coverage)
