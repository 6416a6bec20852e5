"""`specconsole connect [HOST]`: the terminal console.

HOST may be a profile name (`local` is built in), an ssh destination (`user@gpu1`,
`gpu1:2222`) or a Host alias from ~/.ssh/config; the last two get a session-only profile
with the default engine settings (save one with `specconsole hosts add` to keep it).
Without HOST the console opens on a picker of profiles and ssh-config hosts.

This module has no Textual import (the console core must not): the app is imported
only when `connect` runs. Host resolution is `console.hosts`, shared with every other
command and the TUI.
"""

from __future__ import annotations

import argparse

from console.commands.parsing import HostCommand
from console.hosts import resolve_host


async def cmd_connect(args: argparse.Namespace) -> int:
    if args.host:
        resolve_host(args.host)  # a typo is one sentence here, before the screen is taken
    from console.tui.app import run_console  # Textual is imported only here

    return await run_console(
        host=args.host, theme=args.theme, accept_new_host_key=args.accept_new_host_key
    )


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `connect` to the `specconsole` parser."""
    p = sub.add_parser(
        "connect",
        help="Open the terminal console on a host.",
        description="Open the terminal console on a host (profile, user@host or ssh alias); "
        "without HOST, pick one. Quitting leaves the engine service running.",
    )
    p.add_argument("host", nargs="?", help="profile name, user@host or ~/.ssh/config alias")
    p.add_argument("--theme", help="theme name (dark, light, high-contrast, ...); remembered")
    p.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="trust an unknown SSH host key without asking (a changed key is still refused)",
    )
    p.set_defaults(func=cmd_connect)
