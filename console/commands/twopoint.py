"""`specconsole twopoint | streamcheck HOST`: two measurement methods, each figure with its
interval, and the reason a two-point figure differs from the whole request's.

Thin over `methods.two_point` / `methods.stream_check`; the figures and their intervals
come from `analysis/two_point.py`.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.analysis.intervals import Interval
from console.commands.base import (
    HostCommand,
    common_options,
    emit_json,
    footer,
    measure_session,
    progress,
    with_service,
)
from console.measure import methods
from console.service import EngineService


def _iv(figures: dict[str, Any], key: str) -> str:
    data = (figures.get("intervals") or {}).get(key) or figures.get(key)
    if not isinstance(data, dict):
        return "-"
    return Interval.from_dict(data).text("{:.1f}") + " tok/s"


def twopoint_lines(f: dict[str, Any], n1: int, n2: int) -> list[str]:
    """The two-point result as `twopoint` prints it."""
    lines = [
        f"two-point decode: {_iv(f, 'twopoint_tok_s')} = ({n2} - {n1}) tokens / "
        f"(T({n2}) - T({n1})), medians of {f['pairs']} pairs, client wall time [95% interval]"
    ]
    if f["pairs"] < 2:
        lines.append("  one pair has no spread to resample: no interval; --repeat 3 gives one")
    if f.get("server_tok_s"):
        lines.append(f"server decode time, same tokens: {_iv(f, 'server_tok_s')} "
                     f"({f['agreement']:+.1%} client vs server)")  # fmt: skip
    if f.get("whole_request_tok_s"):
        lines.append(f"whole-request decode (N={n2}, server, tokens 1..{n2}): "
                     f"{_iv(f, 'whole_request_tok_s')}")  # fmt: skip
    gap = (f.get("intervals") or {}).get("gap")
    if gap:
        g = Interval.from_dict(gap)
        lines.append(f"two-point (tokens {n1}..{n2}) / whole request: x{g.value:.2f} "
                     f"[{g.low:.2f}–{g.high:.2f}]")  # fmt: skip
    spans = f.get("spans")
    if spans:
        lines.append(f"  commit {spans['first_commit']:.2f} over the first {n1} tokens, "
                     f"{spans['later_commit']:.2f} over {n1}..{n2}")  # fmt: skip
    lines += [f"  why: {reason}" for reason in f.get("gap_reasons", ())]
    return lines


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
        f = result.figures
        if f.get("twopoint_tok_s") is None:
            print(f"two-point: no result ({f.get('error', 'T(N2) was not above T(N1)')})")
            return 1
        for line in twopoint_lines(f, args.n1, args.n2):
            print(line)
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
        f = result.figures
        for label, key in (
            ("streamed, client-side", "stream_client_tok_s"),
            ("streamed, engine's figure", "stream_server_tok_s"),
            ("not streamed, engine's figure", "plain_tok_s"),
        ):
            if f.get(key):
                print(f"{label:<32}{_iv(f, key)} (median [95% interval])")
        print(f.get("verdict", "no verdict: the streamed or the plain requests gave no figure"))
        footer(result)
        return 2 if f.get("distorted") else 0

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
