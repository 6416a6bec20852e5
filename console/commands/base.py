"""What every `specconsole` command shares: one-sentence usage errors, exit codes,
host-key confirmation on a terminal, and opening a host's `EngineService`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import NoReturn

from console import config as profiles
from console.service import EngineService, LifecycleEvent
from console.transport import HostKeyInfo, Transport, open_transport

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_FAILED = 3  # the engine did not come up (failed state)


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one sentence."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"specconsole: {message.rstrip('.')}; see `{self.prog} --help`.\n")


def is_tty() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def ask(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    try:
        return input().strip().lower() in ("y", "yes")
    except EOFError:
        return False


def host_key_confirmer(accept_new: bool) -> Callable[[HostKeyInfo], Awaitable[bool]]:
    async def confirm(info: HostKeyInfo) -> bool:
        if accept_new:
            err(f"Trusting new host key: {info.describe()}.")
            return True
        if not is_tty():
            return False  # the UnknownHostKey error then says to pass --accept-new-host-key
        err(f"The authenticity of {info.destination} can't be established.")
        return await asyncio.to_thread(
            ask, f"{info.key_type} key fingerprint is {info.fingerprint}. Trust it and connect?"
        )

    return confirm


def err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def print_event(event: LifecycleEvent) -> None:
    err(f"  {event.describe()}")


def print_failure(event: LifecycleEvent) -> None:
    err(f"The engine failed: {event.describe()}.")
    if event.log_tail:
        err(f"Last {len(event.log_tail)} log lines:")
        for line in event.log_tail:
            err(f"  | {line}")


# -- host commands ----------------------------------------------------------------------


async def with_service(
    args: argparse.Namespace, body: Callable[[EngineService], Awaitable[int]]
) -> int:
    """Open the host named by `args.host`, run `body` on its service, always close."""
    profile = profiles.load_profile(args.host)
    transport: Transport = open_transport(
        profile, confirm_host_key=host_key_confirmer(args.accept_new_host_key)
    )
    service = EngineService(profile, transport)
    try:
        service.add_listener(print_event)
        return await body(service)
    finally:
        await service.close()
        await transport.close()


HostCommand = Callable[[str, str], argparse.ArgumentParser]
