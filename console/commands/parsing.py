"""What every `specconsole` command's parser shares and nothing heavy: exit codes, the
one-sentence usage error, `err`, and the `host_command` type. Kept apart from `base`
(which opens services and runs measurements) so `specconsole connect`, the console's
start, parses its command line without importing the measuring commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_FAILED = 3  # the engine did not come up (failed state)

# `host_command(name, help)`: a subcommand taking HOST and --accept-new-host-key
HostCommand = Callable[[str, str], argparse.ArgumentParser]


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one sentence."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"specconsole: {message.rstrip('.')}; see `{self.prog} --help`.\n")


def err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
