"""What the experiments that restart the engine and put its flags back (`breakeven`,
`load`, `bench verdict`) share on the command line: the run under a progress line, its
JSON (also to `--save FILE` where the command has it) or its printout, and exit 1
whenever the original flags did not come back; and their common options (seed, restart
timeout, extra texts, history, JSON, sampling)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from typing import Any

from console.commands.base import EXIT_FAILED, err, measure_session, progress, with_service
from console.commands.sampling_options import add_sampling_options
from console.measure.session import MeasureSession
from console.service.engine_service import EngineService


async def run_restoring(
    args: argparse.Namespace,
    name: str,
    run: Callable[[MeasureSession, Any], Awaitable[Any]],
    show: Callable[[Any], None],
) -> int:
    """`run(session, tick)` on the host, then its result as JSON or through `show`."""

    async def body(service: EngineService) -> int:
        session = measure_session(service, args)
        with progress(args, name) as tick:
            result = await run(session, tick)
        if getattr(args, "save", None):  # the table on screen and the JSON kept, one run
            with open(args.save, "w") as fh:
                json.dump(result.as_dict(), fh, indent=2, default=str)
        if args.json:
            print(json.dumps(result.as_dict(), indent=2, default=str))
        else:
            show(result)
        if not result.restored:
            err(f"The engine on {args.host} is not on its original flags; see above.")
            return EXIT_FAILED
        return 0

    return await with_service(args, body)


def add_restart_options(p: argparse.ArgumentParser) -> None:
    """The options every restoring experiment takes, after its own."""
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for each restart")
    p.add_argument("--prompts", metavar="FILE", help="extra texts: a .txt (one type) or .jsonl")
    p.add_argument("--no-store", action="store_true", help="do not record the run in history")
    p.add_argument("--json", action="store_true", help="machine-readable output only")
    add_sampling_options(p, what="both arms", seed_flag="--sampling-seed")
