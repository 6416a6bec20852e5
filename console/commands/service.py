"""`status`, `start`, `restart`, `stop`, `flags`, `set`, `rollback`, `logs`: the
service's own commands, on the `EngineService` the TUI shares."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap

from console.commands.base import (
    EXIT_ERROR,
    EXIT_FAILED,
    HostCommand,
    ask,
    err,
    is_tty,
    lease_options,
    print_failure,
    with_service,
)
from console.commands.baseline_options import baseline_options, baseline_overrides
from console.commands.measure import add_sample_options, sample_target
from console.errors import ConsoleError, ServiceError
from console.experiments.baseline import ORDERS, apply_with_baseline
from console.service import EngineService, LifecycleEvent
from console.service.already_running import AlreadyRunning, start_outcome
from console.service.flag_view import read_flag_view, value_text
from console.service.flags import parse_assignments
from console.service.rollback import plan_rollback
from console.service.state_text import service_state
from console.settings import DEFAULT_SETTINGS
from console.store import RunStore


async def cmd_status(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        st = await service.status()
        # The key flags as the dashboard shows them; the engine is asked only when ready,
        # and a schema that cannot be read must not stop `status` from answering.
        view = await read_flag_view(service, ask_engine=st.state == "ready", schema_required=False)
        key_flags = view.key_flags()
        state, detail = service_state(st, None, running=False)
        # Which interpreter starts the engine (and which one the running engine used):
        # "No module named 'engine'" is otherwise a guess about PATH.
        launcher = service.profile.interpreter_note
        started_with = st.config.argv[0] if st.config is not None and st.config.argv else None
        if args.json:
            out = st.as_dict()
            out["detail"] = detail
            out["launcher"] = launcher
            out["started_with"] = started_with
            out["key_flags"] = [k.as_dict() for k in key_flags]
            print(json.dumps(out, indent=2))
            return 0
        line = f"{st.host}: {state}"
        if detail:
            line += f" {detail}"
        line += f" ({st.engine}, {st.supervisor} supervisor"
        line += f", pid {st.pid}" if st.pid else ""
        line += f", port {st.port})" if st.port else ")"
        print(line)
        if st.message:
            print(f"  {st.message}")
        for note in (st.port_note, st.drift):
            if note:
                print(f"  warning: {note}")
        if st.lease:
            print(f"  being changed by {st.lease}")
        if st.revision:
            print(f"  launch config revision {st.revision}")
        if st.hint:
            print(f"  {st.hint}")
        if st.root_cause:
            print(f"  root cause (first error in its log): {st.root_cause}")
        print(f"  launcher: {launcher}")
        if st.speculation is not None:
            print(f"  speculation: {st.speculation.describe()}")
        if st.bind is not None:
            warning = st.bind.warning()
            print(f"  warning: {warning}" if warning else f"  binds {st.bind.address}")
        if started_with and not launcher.startswith(started_with):
            print(f"  the running config was started with {started_with}")
        if key_flags:
            width = max(len(k.label) for k in key_flags)
            print("  key flags:")
            for k in key_flags:
                print(f"    {k.label:<{width}}  {k.value}  ({k.source})")
        if st.state == "failed" and st.log_tail:
            print(f"  last {len(st.log_tail)} log lines:")
            for tail in st.log_tail:
                print(f"  | {tail}")
        return 0

    return await with_service(args, body)


async def _report(
    event: LifecycleEvent, wait: bool, host: str, as_json: bool = False, pid: int | None = None
) -> int:
    if as_json:
        print(json.dumps(start_outcome(event, host, wait, pid), indent=2))
        return 0 if event.state == "ready" or not wait else EXIT_FAILED
    if isinstance(event, AlreadyRunning):  # `systemctl start` on a running unit: success
        print(f"{host}: {event.message}")
        return 0
    if not wait:
        # --no-wait: the command returns while the engine is still on its way.
        print(f"{host}: {event.describe()}; returned without waiting for ready "
              f"(--no-wait): `specconsole status {host}` says when it is")  # fmt: skip
        return 0
    if event.state == "ready":
        print(f"{host}: ready")
        return 0
    print_failure(event)
    return EXIT_FAILED


async def _pid(service: EngineService, args: argparse.Namespace) -> int | None:
    """The engine's pid for `--json` (one supervisor read; none without --json)."""
    return (await (await service.supervisor()).state()).pid if args.json else None


async def cmd_start(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        event = await service.start(wait=args.wait, timeout=args.timeout)
        return await _report(event, args.wait, args.host, args.json, await _pid(service, args))

    return await with_service(args, body)


async def cmd_restart(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        event = await service.restart(wait=args.wait, timeout=args.timeout)
        return await _report(event, args.wait, args.host, args.json, await _pid(service, args))

    return await with_service(args, body)


async def cmd_stop(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        await service.stop(timeout=args.timeout)
        print(f"{args.host}: stopped")
        return 0

    return await with_service(args, body)


async def cmd_flags(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        view = await read_flag_view(service)
        if args.json:
            print(
                json.dumps(
                    {
                        "host": args.host,
                        "engine": service.profile.engine,
                        "source": view.source,
                        "roles": dict(view.roles),
                        "current": view.current,
                        "warnings": list(view.warnings),
                        "effective": view.effective,
                        "flags": [row.spec.as_dict() for row in view.rows if row.spec],
                    },
                    indent=2,
                )
            )
            return 0
        shown = view.listed(show_all=args.all)
        print(f"{args.host}: {service.profile.engine} flags from {view.source}")
        for warning in view.warnings:
            print(f"  warning: {warning}")
        for row in shown:
            current_text = json.dumps(row.current) if row.current is not None else "-"
            line = f"  --{row.name} = {current_text}   [{row.kind}, default {row.default}]"
            if row.effective is not None and (row.current is None or row.differs):
                line += f"   engine reports {value_text(row.effective)}"
            print(line)
            for note_line in textwrap.wrap(row.note, 88):
                print(f"      {note_line}")
        hidden = len(view.rows) - len(shown)
        if hidden:
            print(f"  ({hidden} more flags; --all lists them)")
        return 0

    return await with_service(args, body)


async def cmd_set(args: argparse.Namespace) -> int:
    changes = parse_assignments(args.assignments)

    async def body(service: EngineService) -> int:
        plan = await service.plan(changes)
        if args.dry_run and args.json:
            print(json.dumps({"host": args.host, "dry_run": True, **plan.as_dict()}, indent=2))
            return 0
        for notice in plan.notices:
            err(f"  note: {notice}")
        if not plan.changed:
            print(f"{args.host}: no change (the flags already have these values)")
            return 0
        # With --json, stdout carries the JSON only; the diff goes where the notes go.
        print(plan.diff, file=sys.stderr if args.json else sys.stdout)
        if plan.checked_by:
            err(f"  the new command line was checked by {plan.checked_by}")
        if args.dry_run:
            return 0
        if not args.yes:
            if not is_tty():
                raise ConsoleError("Not applying without confirmation; pass --yes to apply.")
            if not await asyncio.to_thread(ask, f"Apply and restart {args.host}?"):
                err("Not applied.")
                return EXIT_ERROR
        done = None
        overrides = baseline_overrides(args)
        if args.baseline or overrides:
            done = await apply_with_baseline(
                service, plan, timeout=args.timeout, store=RunStore.default(),
                on_note=lambda t: err(f"  {t}"), target=sample_target(args),
                order=args.order, overrides=overrides, calibrate=not args.no_calibrate,
            )  # fmt: skip
            result = done.result
        else:
            result = await service.apply(plan, timeout=args.timeout)
        if args.json:
            out = {"ok": result.ok, "state": result.event.state}
            print(json.dumps({**out, **(done.as_dict() if done else {})}, indent=2))
        if result.ok:
            if not args.json:
                print(f"{args.host}: ready with the new flags")
                for line in done.lines() if done else ():
                    print(line)
            return 0
        print_failure(result.event)
        err(
            f"The previous config is kept as last-good; `specconsole rollback {args.host}` "
            "restores it."
        )
        if not args.yes and is_tty() and await asyncio.to_thread(ask, "Roll back now?"):
            back = await service.rollback(timeout=args.timeout)
            if back.ok:
                print(f"{args.host}: rolled back and ready")
                return EXIT_FAILED
            print_failure(back.event)
        return EXIT_FAILED

    return await with_service(args, body)


async def cmd_rollback(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        plan = await plan_rollback(service, args.host)
        if not plan.possible:
            raise ServiceError(plan.text)
        print(plan.text)
        result = await service.rollback(timeout=args.timeout)
        if result.ok:
            print(f"{args.host}: rolled back and ready")
            return 0
        print_failure(result.event)
        return EXIT_FAILED

    return await with_service(args, body)


async def cmd_logs(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        # Link markers go to stderr, so `logs -f | grep` and redirected logs hold log lines only.
        lines = service.logs(
            follow=args.follow,
            lines=args.lines,
            grep=args.grep,
            on_link=lambda _up, text: err(f"-- {text} --"),
        )
        async for line in lines:
            print(line, flush=args.follow)
        return 0

    return await with_service(args, body)


# -- parser -----------------------------------------------------------------------------


def wait_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_SETTINGS.ready_timeout_s,
        help="seconds to wait for ready",
    )


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """status, start, restart, stop, flags, set, rollback, logs: the service itself."""
    p = host_command("status", "Show the service state: stopped, starting, loading, ready, failed.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    for name, func, text in (
        ("start", cmd_start, "Start the engine service."),
        ("restart", cmd_restart, "Stop and start the engine service."),
    ):
        p = host_command(name, text)
        # Followed to ready by default, as an operator expects of "start"; --no-wait
        # returns at once (and says so).
        p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                       help="follow it until ready or failed (default; --no-wait returns "
                            "while it starts)")  # fmt: skip
        wait_options(p)
        lease_options(p)
        p.add_argument("--json", action="store_true", help="the outcome as one JSON object")
        p.set_defaults(func=func)

    p = host_command("stop", "Stop the engine service (SIGTERM, then SIGKILL after --timeout).")
    p.add_argument("--timeout", type=float, default=DEFAULT_SETTINGS.stop_timeout_s)
    lease_options(p)
    p.set_defaults(func=cmd_stop)

    p = host_command("flags", "Show the engine's flags (from its --help) and current values.")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all", action="store_true", help="list every flag, not just tuned/set ones")
    p.set_defaults(func=cmd_flags)

    p = host_command("set", "Change flags: validate, show the diff, write, restart, wait.")
    p.add_argument("assignments", nargs="+", metavar="key=value", help="`key=` unsets a flag")
    p.add_argument("--dry-run", action="store_true", help="show the diff and change nothing")
    p.add_argument("--yes", action="store_true", help="apply without asking")
    p.add_argument(
        "--baseline",
        action="store_true",
        help="run a short fixed baseline before and after, and show the change side by side",
    )
    p.add_argument(
        "--bracket", action="store_const", const="A-B-A-B", dest="order",
        help="with --baseline: --order A-B-A-B",
    )  # fmt: skip
    p.add_argument(
        "--order", choices=ORDERS, default="auto",
        help="with --baseline: side-by-side (the after flags as a second engine process, "
        "interleaved request by request: drift cancels), A-B (one restart; the host's "
        "measured drift in every interval), A-B-A-B (half the before requests after the "
        "change, via the last-good flags: linear drift cancels; two extra restarts), or auto "
        "(default: side by side where the host holds both engines, else A-B-A-B when the "
        "host's measured restart is under a minute, else A-B)",
    )  # fmt: skip
    p.add_argument(
        "--no-calibrate",
        action="store_true",
        help="with --baseline: without a stored noise profile, do not measure one first",
    )
    p.add_argument("--repeat", type=int, help="with --baseline: exactly this many repeats")
    add_sample_options(p)
    p.add_argument("--json", action="store_true", help="the outcome (and comparison) as JSON")
    baseline_options(p)
    wait_options(p)
    lease_options(p)
    p.set_defaults(func=cmd_set)

    p = host_command("rollback", "Restore the last-good flags, restart and wait for ready.")
    wait_options(p)
    lease_options(p)
    p.set_defaults(func=cmd_rollback)

    p = host_command("logs", "Print the engine's log (the current run).")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    p.add_argument("--grep", metavar="RE", help="only lines matching this regular expression")
    p.add_argument("-n", "--lines", type=int, default=200, help="how many recent lines")
    p.set_defaults(func=cmd_logs)
