"""`specconsole web` (the console in a browser) and `specconsole bench tui`.

Both run Textual code, which only `console.tui` may import, so the Textual side is
imported inside the command functions; building the parser stays Textual-free.
"""

from __future__ import annotations

import argparse
import json
import os

from console.commands.parsing import EXIT_FAILED, HostCommand
from console.errors import ConsoleError
from console.hosts import resolve_host

TOKEN_ENV = "SPECCONSOLE_WEB_TOKEN"


async def cmd_web(args: argparse.Namespace) -> int:
    # An unknown host fails here, once, not in every browser tab; `connect` takes the same
    # names (profiles, user@host, ssh aliases).

    resolve_host(args.host)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    from console.tui import web_server as web  # Textual and textual-serve stay inside console.tui

    if token is not None:
        try:
            web.check_token(token)
        except ValueError as exc:
            raise ConsoleError(str(exc)) from None
    try:
        await web.serve(
            args.host,
            port=args.port,
            bind=args.bind,
            token=token,
            accept_new_host_key=args.accept_new_host_key,
        )
    except OSError as exc:
        raise ConsoleError(str(exc)) from None
    return 0


async def cmd_bench_tui(args: argparse.Namespace) -> int:
    from console.tui import bench

    result = await bench.run(idle_seconds=args.idle_seconds, points=args.points)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        print(result.table())
    return 0 if result.ok or not args.check else EXIT_FAILED


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `web HOST` to the `specconsole` parser."""
    p = host_command(
        "web",
        "Serve the console for HOST in a browser (one `connect HOST` per browser tab).",
    )
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    p.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (default 127.0.0.1); any non-loopback address requires "
        "an access token",
    )
    p.add_argument(
        "--token",
        help=f"access token the page asks for (also ${TOKEN_ENV}); generated and printed "
        "once when binding off loopback without one",
    )
    p.set_defaults(func=cmd_web)


def add_bench_tui(bench: argparse._SubParsersAction) -> None:
    """`specconsole bench tui` (registered by console.commands.bench)."""
    tui = bench.add_parser(
        "tui",
        help="Time the TUI: first frame, chart redraw, idle CPU.",
        description="Time the TUI headless: startup to first frame, a chart redraw of "
        "--points samples, and CPU use while idle with live charts (targets: 500 ms, 15 ms, 1%%).",
    )
    tui.add_argument("--json", action="store_true")
    tui.add_argument("--points", type=int, default=600, help="samples per chart (default 600)")
    tui.add_argument(
        "--idle-seconds", type=float, default=5.0, help="idle window for CPU use (default 5)"
    )
    tui.add_argument("--check", action="store_true", help="exit 3 when a target is missed")
    tui.set_defaults(func=cmd_bench_tui)
