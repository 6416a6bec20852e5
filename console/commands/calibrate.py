"""`specconsole calibrate HOST`: measure and store the host's noise profile.

Thin over `console.experiments.calibrate`: blocks of the baseline's points with unchanged
flags, a restart between the first few; prints the request-to-request spread per point, the
shift across each restart, the restart time and the order `set --baseline` will then use
by default. `--show` prints the stored profile without measuring.
"""

from __future__ import annotations

import argparse
import json
from contextlib import closing

from console.commands.base import HostCommand, err, with_service
from console.commands.baseline_options import baseline_options, baseline_overrides
from console.errors import ConsoleError
from console.experiments.baseline import plan_for
from console.experiments.calibrate import BLOCKS, RESTARTS, ROUNDS, calibrate
from console.measure.session import MeasureSession
from console.service import EngineService
from console.settings import DEFAULT_SETTINGS
from console.store import RunStore


async def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.blocks < 2 or args.rounds < 1 or args.restarts < 0:
        raise ConsoleError("Calibration needs --blocks 2 or more, --rounds 1 or more and "
                           "--restarts 0 or more.")  # fmt: skip

    async def body(service: EngineService) -> int:
        with closing(RunStore.default()) as store:
            if args.show:
                profile = await store.noise_profile(service.profile.name)
                if profile is None:
                    raise ConsoleError(
                        f"No noise profile is stored for {args.host}; "
                        f"`specconsole calibrate {args.host}` measures one."
                    )
            else:
                session = MeasureSession(service, store=store)
                plan = await plan_for(session, **baseline_overrides(args))
                profile = await calibrate(
                    service, store, plan=plan, blocks=args.blocks, restarts=args.restarts,
                    rounds=args.rounds,
                    timeout=args.timeout, on_note=lambda t: err(f"  {t}"),
                )  # fmt: skip
        if args.json:
            print(json.dumps(profile.as_dict(), indent=2))
        else:
            print("\n".join(profile.lines()))
        return 0

    return await with_service(args, body)


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `calibrate` to the `specconsole` parser."""
    p = host_command(
        "calibrate",
        "Measure the host's noise: request-to-request spread and drift across a restart.",
    )
    p.add_argument("--blocks", type=int, default=BLOCKS,
                   help=f"blocks with unchanged flags (default {BLOCKS})")  # fmt: skip
    p.add_argument("--restarts", type=int, default=RESTARTS,
                   help=f"restarts among them, first (default {RESTARTS})")  # fmt: skip
    p.add_argument(
        "--rounds",
        type=int,
        default=ROUNDS,
        help=f"whole rounds of every passage per point and block (default {ROUNDS})",
    )
    p.add_argument("--show", action="store_true", help="print the stored profile; measure nothing")
    p.add_argument("--timeout", type=float, default=DEFAULT_SETTINGS.ready_timeout_s,
                   help="seconds to wait for each restart")  # fmt: skip
    p.add_argument("--json", action="store_true", help="the profile as JSON")
    baseline_options(p)
    p.set_defaults(func=cmd_calibrate)
