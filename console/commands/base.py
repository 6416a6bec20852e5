"""What every `specconsole` command shares: one-sentence usage errors, exit codes,
host-key confirmation on a terminal, and opening a host's `EngineService`.

Lifecycle progress reaches a command through a subscription, not a callback list on the
service: `with_service` subscribes for the whole command and hands each event to its
`on_event` (by default `print_event`, to stderr); a command that prints no progress
passes `on_event=None`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import NoReturn

from console.events import Subscription
from console.service import EngineService, LifecycleEvent
from console.transport import HostKeyInfo

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
    if event.hint:
        err(f"  {event.hint}")
    if event.root_cause:
        err(f"  root cause (first error in its log): {event.root_cause}")
    if event.log_tail:
        err(f"Last {len(event.log_tail)} log lines:")
        for line in event.log_tail:
            err(f"  | {line}")


# -- host commands ----------------------------------------------------------------------


async def _deliver(
    events: Subscription[LifecycleEvent], on_event: Callable[[LifecycleEvent], None]
) -> None:
    async for event in events:
        on_event(event)


async def with_service(
    args: argparse.Namespace,
    body: Callable[[EngineService], Awaitable[int]],
    *,
    on_event: Callable[[LifecycleEvent], None] | None = print_event,
) -> int:
    """Open the host named by `args.host` (a profile, user@host, host:port, an ssh-config
    alias or `local`, resolved by `console.hosts` as `connect` does), run `body` on its
    service with every lifecycle event going to `on_event`, and always close."""
    opened = EngineService.open(
        args.host, confirm_host_key=host_key_confirmer(args.accept_new_host_key)
    )
    async with opened as service, service.subscribe() as events:
        printer = asyncio.create_task(_deliver(events, on_event)) if on_event else None
        try:
            return await body(service)
        finally:
            if printer is not None and on_event is not None:
                printer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await printer
                for event in events.pending():  # published after the printer last ran
                    on_event(event)


HostCommand = Callable[[str, str], argparse.ArgumentParser]
