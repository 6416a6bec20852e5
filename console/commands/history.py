"""`specconsole history`: the stored runs, read without a host.

Reads only the local run store, so it works with every host down. Human output is plain
aligned text (one row per run or sample, greppable); `--json` is machine output only and
carries every stored field.
"""

from __future__ import annotations

import argparse
import io
import json
from contextlib import closing
from pathlib import Path

from console.analysis import format as fmt
from console.analysis.format import table
from console.analysis.records import RUN_KINDS
from console.commands.base import HostCommand, Parser, err
from console.commands.gpu import gpu_table
from console.experiments.explain import drift_for_runs, explain_runs
from console.store import HistoryError, RunStore, StoredRun, compare, export_csv, export_json
from console.store.compare import check_sampling
from console.store.compare_text import comparison_lines
from console.store.runs import RUN_STATUSES

EXPORT_FORMATS = ("csv", "json")


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `history list|show|compare|explain|export` to the `specconsole` parser."""
    history = sub.add_parser(
        "history",
        help="Stored measurement runs: list, show, compare, export.",
        description="Stored measurement runs: list, show, compare, export.",
    )
    hsub = history.add_subparsers(dest="history_action", required=True, parser_class=Parser)

    p = hsub.add_parser("list", help="List stored runs, newest first.")
    p.add_argument("--host", help="only runs on this host profile")
    p.add_argument("--method", help="only runs of this method (probe, context-sweep, watch, ...)")
    p.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    p.add_argument("--kind", help=f"only runs of this kind ({', '.join(RUN_KINDS)})")
    p.add_argument("--limit", type=_positive_int, default=50, help="at most this many runs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_history_list)

    p = hsub.add_parser("show", help="Show one run: header, flags, samples.")
    p.add_argument("id", type=int, help="run id (see `history list`)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_history_show)

    p = hsub.add_parser("compare", help="Compare two runs point by point, with the flags diff.")
    p.add_argument("id_a", type=int, metavar="ID1", help="the run to compare against")
    p.add_argument("id_b", type=int, metavar="ID2", help="the run compared")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--mixed-sampling",
        action="store_true",
        help="compare runs measured at different sampling settings anyway",
    )
    p.set_defaults(func=cmd_history_compare)

    p = hsub.add_parser(
        "explain",
        help="The verdict on run ID2 against run ID1: physics, not physics, or not enough "
        "evidence.",
    )
    p.add_argument("id_a", type=int, metavar="ID1", help="the baseline run")
    p.add_argument("id_b", type=int, metavar="ID2", help="the run to explain")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--mixed-sampling",
        action="store_true",
        help="explain a run against one at different sampling settings anyway",
    )
    p.set_defaults(func=cmd_history_explain)

    p = hsub.add_parser("export", help="Write runs and all their samples as CSV or JSON.")
    p.add_argument("ids", type=int, nargs="+", metavar="ID")
    p.add_argument("--format", default="csv", help="csv (one row per sample) or json")
    p.add_argument("-o", "--output", type=Path, help="file to write (default: stdout)")
    p.set_defaults(func=cmd_history_export)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


# -- commands ---------------------------------------------------------------------------


async def cmd_history_list(args: argparse.Namespace) -> int:
    with closing(RunStore.default()) as store:
        runs = await store.runs(
            host=args.host, method=args.method, status=args.status, kind=args.kind,
            limit=args.limit,
        )  # fmt: skip
        if not runs:
            raise HistoryError(_nothing_matches(args, store))
    if args.json:
        print(json.dumps([run.as_dict() for run in runs], indent=2, default=str))
        return 0
    rows = [
        (
            str(run.id),
            _when(run.info.started_at),
            _duration(run),
            run.info.host,
            _engine(run),
            run.info.method,
            run.info.kind,
            _status(run),
            str(run.request_count),
            str(run.live_count),
            run.info.flags_hash,
        )
        for run in runs
    ]
    headers = ("ID", "STARTED", "TOOK", "HOST", "ENGINE", "METHOD", "KIND", "STATUS", "REQ")
    print(table((*headers, "LIVE", "FLAGS"), rows, right={0, 2, 8, 9}))
    return 0


async def cmd_history_show(args: argparse.Namespace) -> int:
    with closing(RunStore.default()) as store:
        run = await store.run(args.id)
    if args.json:
        print(json.dumps(run.as_dict(), indent=2, default=str))
        return 0
    print("\n".join(_run_header(run)))
    if run.info.method == "load" and run.summary and run.summary.get("spec_flags_hash"):
        # Recomputed from the stored samples, as the run itself tabulated them.
        from console.analysis.load_format import table_lines
        from console.experiments.load import table_of

        seed = int(run.info.params.get("seed", 0))
        print("\n" + "\n".join(table_lines(table_of(run.requests, run.summary, seed))))
    if run.requests:
        flagged = sum(1 for s in run.requests if s.flagged is not None)
        print(
            f"\nrequest samples: {len(run.requests)}" + (f", {flagged} flagged" if flagged else "")
        )
        print(_request_table(run))
    if run.live:
        print(f"\nlive samples: {len(run.live)}")
        print(_live_table(run))
    if run.gpu:
        gpus = len({s.index for s in run.gpu})
        print(f"\ngpu samples: {len(run.gpu)} ({gpus} GPU{'s' if gpus != 1 else ''})")
        print(gpu_table(run.gpu, with_time=True))
    if not run.requests and not run.live:
        print("\n(no samples)")
    return 0


async def cmd_history_compare(args: argparse.Namespace) -> int:
    with closing(RunStore.default()) as store:
        a, b = await store.run(args.id_a), await store.run(args.id_b)
        drift = await drift_for_runs(store, a, b)
    result = compare(a, b, drift=drift, allow_mixed=args.mixed_sampling)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
        return 0
    print("\n".join(comparison_lines(result)))
    return 0


async def cmd_history_explain(args: argparse.Namespace) -> int:
    with closing(RunStore.default()) as store:
        a, b = await store.run(args.id_a), await store.run(args.id_b)
        check_sampling(a, b, allow_mixed=args.mixed_sampling)  # before any figure is read
        explained = await explain_runs(store, a, b)
    if args.json:
        print(json.dumps(explained.as_dict(), indent=2, default=str))
        return 0
    print("\n".join(explained.lines()))
    return 0


async def cmd_history_export(args: argparse.Namespace) -> int:
    if args.format not in EXPORT_FORMATS:
        raise HistoryError(f"Unknown export format {args.format!r}; use --format csv or json.")
    with closing(RunStore.default()) as store:
        runs = [await store.run(run_id) for run_id in dict.fromkeys(args.ids)]
    # Rendered whole before anything is written: an error leaves no half-written file.
    text = io.StringIO()
    (export_csv if args.format == "csv" else export_json)(runs, text)
    if args.output is None:
        print(text.getvalue(), end="")
        return 0
    try:
        with args.output.open("w", newline="", encoding="utf-8") as out:
            out.write(text.getvalue())
    except OSError as exc:
        raise HistoryError(f"Cannot write {args.output}: {exc.strerror or exc}.") from exc
    samples = sum(run.sample_count for run in runs)
    err(f"exported {len(runs)} run(s), {samples} samples, to {args.output}")
    return 0


def _nothing_matches(args: argparse.Namespace, store: RunStore) -> str:
    filters = [
        f"{name} {value!r}"
        for name, value in (
            ("host", args.host),
            ("method", args.method),
            ("status", args.status),
            ("kind", args.kind),
        )
        if value is not None
    ]
    if not filters:
        return f"No runs are stored yet (history file {store.path})."
    return f"No stored run has {', '.join(filters)}; `specconsole history list` shows them all."


# -- text -------------------------------------------------------------------------------


def _when(t: float | None) -> str:
    return fmt.when(t)


def _duration(run: StoredRun) -> str:
    if run.finished_at is None:
        return "-"
    return fmt.duration(run.finished_at - run.info.started_at)


def _engine(run: StoredRun) -> str:
    version = run.info.engine_version
    return f"{run.info.engine} {version}" if version else run.info.engine


def _status(run: StoredRun) -> str:
    if run.status == "running" and run.writer_pid:
        return f"running (pid {run.writer_pid})"
    return run.status


def _run_header(run: StoredRun) -> list[str]:
    lines = [
        f"run {run.id}: {run.info.method} ({run.info.kind}) on {run.info.host}",
        f"  engine    {_engine(run)}",
        f"  status    {_status(run)}",
        f"  started   {_when(run.info.started_at)}",
        f"  finished  {_when(run.finished_at)}"
        + (f" (took {_duration(run)})" if run.finished_at is not None else ""),
        f"  flags     {run.info.flags_hash}" + ("" if run.info.flags else " (none set)"),
    ]
    lines += [f"    --{name} = {fmt.value(value)}" for name, value in run.info.flags.items()]
    for title, values in (("params", run.info.params), ("summary", run.summary or {})):
        if values:
            lines.append(f"  {title}")
            lines += [f"    {name} = {fmt.value(value)}" for name, value in values.items()]
    return lines


def _request_table(run: StoredRun) -> str:
    rows = [
        (
            str(s.context_tokens),
            s.text_type,
            fmt.tok_s(s.decode_tok_s),
            fmt.commit(s.commit_len),
            fmt.step_ms(s.step_time_s),
            fmt.ttft_ms(s.ttft_s),
            s.decode_source or "-",
            s.flagged or "",
        )
        for s in run.requests
    ]
    headers = ("CONTEXT", "TEXT", "TOK/S", "COMMIT", "STEP MS", "TTFT MS", "SOURCE", "FLAGGED")
    return table(headers, rows, right={0, 2, 3, 4, 5})


def _live_table(run: StoredRun) -> str:
    rows = [
        (
            _when(s.t),
            s.source,
            fmt.tok_s(s.tok_s),
            fmt.commit(s.commit_len),
            fmt.step_ms(s.step_time_s),
            fmt.count(s.context_tokens),
            fmt.count(s.queue),
            fmt.count(s.running),
            s.note,
        )
        for s in run.live
    ]
    headers = ("TIME", "SOURCE", "TOK/S", "COMMIT", "STEP MS", "CONTEXT", "QUEUE", "RUNNING")
    return table((*headers, "NOTE"), rows, right={2, 3, 4, 5, 6, 7})
