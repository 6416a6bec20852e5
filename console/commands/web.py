"""`specconsole` commands for this area (being built)."""

from __future__ import annotations

import argparse

from console.commands.base import HostCommand


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add this area's subcommands to the `specconsole` parser."""
