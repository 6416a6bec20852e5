"""`specconsole watch HOST`: the live series on a terminal or in a pipe.

The headless twin of the dashboard's live charts, for a second terminal next to a test
run or for `--json | jq` into a file. It prints each sample as it is taken and keeps
going across link drops (the reconnect lines go to stderr, so `--json` stays one JSON
object per line), because an operator watching a flaky link wants to see the gap and the
recovery, not a dead command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import sys
from collections.abc import Callable

from console.analysis import format as fmt
from console.analysis.records import LiveSample, RunInfo
from console.commands.base import HostCommand, err, with_service
from console.errors import ConsoleError
from console.measure.live import LINK_DOWN, LiveSeries, StreamName, is_link_sample
from console.service import EngineService
from console.store import RunStore

SOURCES: tuple[StreamName, ...] = ("log", "metrics")


def _sources(text: str) -> list[StreamName]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    bad = [n for n in names if n not in SOURCES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of {', '.join(SOURCES)}"
        )
    return [n for n in SOURCES if n in names]  # type: ignore[misc]


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def format_sample(sample: LiveSample) -> str:
    """One human line: time, source, tok/s, commit, step ms, context, queue."""
    line = (
        f"{fmt.clock(sample.t)}  {sample.source:<8}"
        f" {fmt.tok_s(sample.tok_s):>8} tok/s"
        f"  commit {fmt.commit(sample.commit_len):>5}"
        f"  step {fmt.step_ms(sample.step_time_s):>7} ms"
        f"  ctx {fmt.count(sample.context_tokens):>6}"
        f"  queue {fmt.count(sample.queue):>2}"
    )
    if sample.running is not None:
        line += f"  running {sample.running}"
    if sample.note:
        line += f"  ({sample.note})"
    return line


def _has_figures(sample: LiveSample) -> bool:
    return any(
        v is not None
        for v in (sample.tok_s, sample.commit_len, sample.step_time_s, sample.context_tokens)
    )


def _printer(host: str, as_json: bool) -> Callable[[LiveSample], None]:
    """How one sample is shown: figures to stdout (a line or JSON), link changes and
    notes to stderr, so `--json` output stays one object per line."""

    def show(sample: LiveSample) -> None:
        if is_link_sample(sample):
            text = sample.note
            if text.startswith(LINK_DOWN):
                why = text.partition(": ")[2]
                text = f"link to {host} lost; reconnecting" + (f" ({why})" if why else "")
            err(f"-- {text} --")
        elif not _has_figures(sample):
            err(f"-- {host}: {sample.note} --")  # e.g. "no /metrics": not a sample row
        elif as_json:
            print(json.dumps(sample.as_dict()), flush=True)
        else:
            print(format_sample(sample), flush=True)

    return show


async def _check_running(service: EngineService, host: str) -> None:
    """A stopped or failed engine has no series to watch: say so and how to fix it."""
    status = await service.status()
    if status.state == "stopped":
        raise ConsoleError(
            f"The engine on {host} is stopped; start it with `specconsole start {host}` "
            "and watch again."
        )
    if status.state == "failed":
        raise ConsoleError(
            f"The engine on {host} has failed ({status.message}); `specconsole status "
            f"{host}` shows its last log lines."
        )


async def _start_run(store: RunStore, service: EngineService, args: argparse.Namespace) -> int:
    # Stored as a run, so `diagnose HOST` (no --observed) can read the last minute.
    config = await service.current_config()
    return await store.start_run(
        RunInfo(
            host=args.host,
            engine=service.profile.engine,
            method="watch",
            params={"interval": args.interval, "sources": list(args.source)},
            flags=dict(config.flags),
        )
    )


async def cmd_watch(args: argparse.Namespace) -> int:
    show = _printer(args.host, args.json)

    async def body(service: EngineService) -> int:
        await _check_running(service, args.host)
        store = None if args.no_store else RunStore.default()
        run_id = await _start_run(store, service, args) if store is not None else None
        sink = functools.partial(store.add_live, run_id) if store and run_id else None
        series = LiveSeries(service, scrape_interval=args.interval, sources=args.source, sink=sink)
        try:
            return await _watch(series, show, args.duration)
        finally:
            if store is not None and run_id is not None:
                await asyncio.shield(store.finish_run(run_id, "complete"))

    return await with_service(args, body)


async def _watch(
    series: LiveSeries, show: Callable[[LiveSample], None], duration: float | None
) -> int:
    """Run the series and show its samples until `duration` ends or the series stops."""
    async with series.subscribe() as sub:
        runner = asyncio.create_task(series.run(), name="watch-series")

        async def printer() -> None:
            async for sample in sub:
                show(sample)

        printing = asyncio.create_task(printer(), name="watch-print")
        try:
            done, _ = await asyncio.wait(
                {runner, printing}, timeout=duration, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            printing.cancel()
            runner.cancel()
            for task in (printing, runner):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            # Samples taken but not printed yet still come out.
            for sample in sub.pending():
                show(sample)
        for task in done:
            task.result()  # a bug in the series: let it surface
    sys.stdout.flush()
    return 0


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `watch` to the `specconsole` parser."""
    p = host_command(
        "watch",
        "Print the live decode series (engine log lines and /metrics) until Ctrl-C.",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per sample and line")
    p.add_argument("--no-store", action="store_true", help="do not record the samples in history")
    p.add_argument(
        "--interval",
        type=_positive,
        default=2.0,
        metavar="S",
        help="seconds between /metrics scrapes (default 2)",
    )
    p.add_argument(
        "--duration", type=_positive, default=None, metavar="S", help="stop after S seconds"
    )
    p.add_argument(
        "--source",
        type=_sources,
        default=list(SOURCES),
        metavar="log,metrics",
        help="which sources to follow (default both)",
    )
    p.set_defaults(func=cmd_watch)
