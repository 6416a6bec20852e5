"""`specconsole`: headless commands on the same core the TUI uses.

Every user error ends as one sentence on stderr and a non-zero exit, never a traceback
(set SPECCONSOLE_DEBUG=1 to see one for an internal error). `specconsole connect`, the
console's start, builds only its own parser: the other commands' modules (measuring,
experiments) are not imported before its first frame.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys

from console.commands.parsing import EXIT_ERROR, Parser, err
from console.errors import ConsoleError


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with `only="connect"`, that command's alone (the same
    `register`, so its help and errors are the same)."""
    parser = Parser(
        prog="specconsole",
        description="Operator console for speculative-decoding inference services.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def host_command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "host", help="profile name (`local` is built in), user@host[:port] or ssh alias"
        )
        p.add_argument(
            "--accept-new-host-key",
            action="store_true",
            help="trust an unknown SSH host key without asking (a changed key is still refused)",
        )
        return p

    if only == "connect":
        from console.commands import ui as ui_commands

        ui_commands.register(sub, host_command)
        return parser
    # Each area registers its own commands (one module each, sharing `commands.base`).
    from console.commands import bench as bench_commands
    from console.commands import breakeven as breakeven_commands
    from console.commands import calibrate as calibrate_commands
    from console.commands import doctor as doctor_commands
    from console.commands import gpu as gpu_commands
    from console.commands import history as history_commands
    from console.commands import hosts as hosts_commands
    from console.commands import live as live_commands
    from console.commands import load as load_commands
    from console.commands import measure as measure_commands
    from console.commands import service as service_commands
    from console.commands import ui as ui_commands
    from console.commands import web as web_commands

    modules = (
        service_commands, hosts_commands, measure_commands, live_commands, history_commands,
        ui_commands, web_commands, gpu_commands, breakeven_commands, bench_commands,
        calibrate_commands, doctor_commands, load_commands,
    )  # fmt: skip
    for module in modules:
        module.register(sub, host_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = build_parser("connect" if words[:1] == ["connect"] else None).parse_args(argv)
    try:
        return asyncio.run(args.func(args))
    except ConsoleError as exc:
        err(f"specconsole: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err("specconsole: interrupted.")
        return 130
    except BrokenPipeError:
        # `specconsole flags gpu1 | head`: the reader left; that is not an error.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("SPECCONSOLE_DEBUG"):
            raise
        err(
            f"specconsole: internal error ({type(exc).__name__}: {exc}); "
            "rerun with SPECCONSOLE_DEBUG=1 for details."
        )
        return 70


if __name__ == "__main__":
    sys.exit(main())
