"""What every measuring command shares: option parsers, the session, the progress bar,
JSON out and the footer naming the stored run."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from console.commands.base import err
from console.measure.methods import MethodResult
from console.measure.prompts import PromptLibrary
from console.measure.session import MeasureSession
from console.numbers import NumberListError, parse_counts
from console.service import EngineService
from console.store import RunStore


def _ints(text: str) -> list[int]:
    """An option's "64,512,1k": the parser the TUI's fields use too."""
    try:
        return parse_counts(text, "Each value")
    except NumberListError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _session(service: EngineService, args: argparse.Namespace) -> MeasureSession:
    library = PromptLibrary.builtin()
    if getattr(args, "prompts", None):
        library.extend_from_file(args.prompts)
    store = None if getattr(args, "no_store", False) else RunStore.default()
    return MeasureSession(service, store=store, library=library, on_note=lambda t: err(f"  {t}"))


@contextmanager
def _progress(args: argparse.Namespace, label: str) -> Iterator[Callable[[int, int], None] | None]:
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


def _emit_json(result: MethodResult, extra: dict[str, Any] | None = None) -> None:
    data = result.as_dict()
    if extra:
        data.update(extra)
    print(json.dumps(data, indent=2, default=str))


def _footer(result: MethodResult) -> None:
    if result.run_id is not None:
        print(f"(stored as run {result.run_id}; `specconsole history show {result.run_id}`)")


def _common(p: argparse.ArgumentParser, *, repeat: int | None) -> None:
    """The options every measuring command takes."""
    p.add_argument(
        "--repeat", type=int, default=repeat,
        help="repeats per point" + (" (default: until --target-rel)" if repeat is None else ""),
    )  # fmt: skip
    p.add_argument("--prompts", metavar="FILE", help="extra texts: a .txt (one type) or .jsonl")
    p.add_argument("--no-store", action="store_true", help="do not record the run in history")
    p.add_argument("--json", action="store_true", help="machine-readable output only")
