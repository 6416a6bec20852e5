"""What every `specconsole` command shares: one-sentence usage errors, exit codes,
host-key confirmation on a terminal, opening a host's `EngineService`, and for the
measuring commands their option parsers, session, progress bar, JSON out and the footer
naming the stored run.

Lifecycle progress reaches a command through a subscription, not a callback list on the
service: `with_service` subscribes for the whole command and hands each event to its
`on_event` (by default `print_event`, to stderr); a command that prints no progress
passes `on_event=None`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from console.commands.parsing import EXIT_ERROR, EXIT_FAILED, EXIT_USAGE, HostCommand, Parser, err
from console.commands.sampling_options import add_sampling_options, given_sampling, with_sampling
from console.events import Subscription
from console.hosts import resolve_host
from console.measure.methods import MethodResult
from console.measure.prompts import PromptLibrary
from console.measure.session import MeasureSession
from console.numbers import NumberListError, parse_counts
from console.service import EngineService, LifecycleEvent
from console.settings import DEFAULT_SETTINGS
from console.store import RunStore
from console.transport import ConfirmHostKey, HostKeyInfo

# Defined in `parsing` (light, for the parser alone), re-exported for the commands.
__all__ = ["EXIT_ERROR", "EXIT_FAILED", "EXIT_USAGE", "HostCommand", "Parser", "err"]


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
    confirm_host_key: ConfirmHostKey | None = None,
) -> int:
    """Open the host named by `args.host` (a profile, user@host, host:port, an ssh-config
    alias or `local`, resolved by `console.hosts` as `connect` does), run `body` on its
    service with every lifecycle event going to `on_event`, and always close. An unknown
    host key goes to `confirm_host_key`, by default `host_key_confirmer`'s."""
    confirm = confirm_host_key or host_key_confirmer(args.accept_new_host_key)
    # `--temperature` and the rest override the profile's sampling for this command only
    target = with_sampling(resolve_host(args.host), args) if given_sampling(args) else args.host
    opened = EngineService.open(target, confirm_host_key=confirm)
    # A change waits for another writer's lease (`--wait-lock`, else the settings'
    # bounded default) and says whom it waits for, where the progress lines go.
    opened.service.on_note = lambda text: err(f"  {text}")
    wait_lock = getattr(args, "wait_lock", None)
    if wait_lock is not None:
        opened.service.lease_wait = wait_lock
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


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0") from None
    return value


def lease_options(p: argparse.ArgumentParser) -> None:
    """`--wait-lock`: for the commands that change a service (they take its lease)."""
    p.add_argument(
        "--wait-lock", type=seconds, metavar="SECONDS", default=None,
        help="while another writer (a person, the TUI, a script) changes this service, "
        "wait up to SECONDS for its lease, naming the holder (default "
        f"{DEFAULT_SETTINGS.lease_wait_s:g} s, --yes scripts included: as long as one "
        "restart may take); 0 refuses at once with the holder's name",
    )  # fmt: skip


# -- the measuring commands' shared parts ------------------------------------------------


def ints(text: str) -> list[int]:
    """An option's "64,512,1k": the parser the TUI's fields use too."""
    try:
        return parse_counts(text, "Each value")
    except NumberListError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def measure_session(service: EngineService, args: argparse.Namespace) -> MeasureSession:
    library = PromptLibrary.builtin()
    if getattr(args, "prompts", None):
        library.extend_from_file(args.prompts)
    store = None if getattr(args, "no_store", False) else RunStore.default()
    return MeasureSession(service, store=store, library=library, on_note=lambda t: err(f"  {t}"))


@contextmanager
def progress(args: argparse.Namespace, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on a terminal; nothing with --json or off a terminal."""
    if getattr(args, "json", False) or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield tick


def emit_json(result: MethodResult, extra: dict[str, Any] | None = None) -> None:
    data = result.as_dict()
    if extra:
        data.update(extra)
    print(json.dumps(data, indent=2, default=str))


def footer(result: MethodResult) -> None:
    if result.run_id is not None:
        print(f"(stored as run {result.run_id}; `specconsole history show {result.run_id}`)")


def common_options(p: argparse.ArgumentParser, *, repeat: int | None) -> None:
    """The options every measuring command takes."""
    p.add_argument(
        "--repeat", type=int, default=repeat,
        help="repeats per point" + (" (default: until --target-rel)" if repeat is None else ""),
    )  # fmt: skip
    p.add_argument("--prompts", metavar="FILE", help="extra texts: a .txt (one type) or .jsonl")
    p.add_argument("--no-store", action="store_true", help="do not record the run in history")
    p.add_argument("--json", action="store_true", help="machine-readable output only")
    add_sampling_options(p)
