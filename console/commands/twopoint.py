"""`specconsole twopoint | streamcheck HOST`: two measurement methods, each figure with its
interval, and the reason a two-point figure differs from the whole request's.

Thin over `methods.two_point` / `methods.stream_check`; the figures and their intervals
come from `analysis/two_point.py`, the lines from `experiments/method_lines.py` (the TUI's
sweeps view shows the same ones).
"""

from __future__ import annotations

import argparse

from console.commands.base import (
    HostCommand,
    common_options,
    emit_json,
    footer,
    measure_session,
    progress,
    with_service,
)
from console.experiments.method_lines import stream_check_lines, two_point_lines
from console.measure import methods
from console.service import EngineService


async def cmd_twopoint(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = measure_session(service, args)
        with progress(args, "two-point") as tick:
            result = await methods.two_point(
                session, n1=args.n1, n2=args.n2, context=args.context, text_type=args.text_type,
                repeat=args.repeat, tick=tick,
            )  # fmt: skip
        if args.json:
            emit_json(result)
            return 0
        for line in two_point_lines(result, args.n1, args.n2):
            print(line)
        if result.figures.get("twopoint_tok_s") is None:
            return 1
        footer(result)
        return 0

    return await with_service(args, body)


async def cmd_streamcheck(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = measure_session(service, args)
        with progress(args, "stream check") as tick:
            result = await methods.stream_check(
                session, context=args.context, max_tokens=args.max_tokens,
                text_type=args.text_type, repeat=args.repeat, tick=tick,
            )  # fmt: skip
        if args.json:
            emit_json(result)
            return 0
        for line in stream_check_lines(result):
            print(line)
        footer(result)
        return 2 if result.figures.get("distorted") else 0

    return await with_service(args, body)


def register(host_command: HostCommand) -> None:
    p = host_command("twopoint", "Decode rate as (N2-N1)/(T(N2)-T(N1)): prefill and RTT cancel.")
    p.add_argument("--n1", type=int, default=32)
    p.add_argument("--n2", type=int, default=160)
    p.add_argument("--context", type=int, default=256, help="prompt length in tokens")
    p.add_argument("--text-type", default="code")
    common_options(p, repeat=3)
    p.set_defaults(func=cmd_twopoint)

    p = host_command("streamcheck", "Does streaming over this link distort decode figures?")
    p.add_argument("--context", type=int, default=256, help="prompt length in tokens")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--text-type", default="code")
    common_options(p, repeat=3)
    p.set_defaults(func=cmd_streamcheck)
