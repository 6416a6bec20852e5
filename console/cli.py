"""`specconsole`: headless commands on the same core the TUI uses.

Every user error ends as one sentence on stderr and a non-zero exit, never a traceback
(set SPECCONSOLE_DEBUG=1 to see one for an internal error).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import textwrap

from console import config as profiles
from console.commands import breakeven as breakeven_commands
from console.commands import history as history_commands
from console.commands import live as live_commands
from console.commands import measure as measure_commands
from console.commands import ui as ui_commands
from console.commands import web as web_commands
from console.commands.base import (
    EXIT_ERROR,
    EXIT_FAILED,
    Parser,
    ask,
    err,
    is_tty,
    print_failure,
    with_service,
)
from console.errors import ConfigError, ConsoleError
from console.measure.baseline import apply_with_baseline, comparison_lines
from console.service import EngineService, LifecycleEvent
from console.service.flags import parse_assignments, unified_diff
from console.store import RunStore


async def cmd_status(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        service.clear_listeners()
        st = await service.status()
        if args.json:
            print(json.dumps(st.as_dict(), indent=2))
            return 0
        line = f"{st.host}: {st.state}"
        if st.percent is not None:
            line += f" {st.percent}%"
        line += f" ({st.engine}, {st.supervisor} supervisor"
        line += f", pid {st.pid}" if st.pid else ""
        line += f", port {st.port})" if st.port else ")"
        print(line)
        if st.message:
            print(f"  {st.message}")
        if st.state == "failed" and st.log_tail:
            print(f"  last {len(st.log_tail)} log lines:")
            for tail in st.log_tail:
                print(f"  | {tail}")
        return 0

    return await with_service(args, body)


async def _report(event: LifecycleEvent, wait: bool, host: str) -> int:
    if not wait:
        print(f"{host}: {event.describe()} (use --wait to follow it until ready)")
        return 0
    if event.state == "ready":
        print(f"{host}: ready")
        return 0
    print_failure(event)
    return EXIT_FAILED


async def cmd_start(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        event = await service.start(wait=args.wait, timeout=args.timeout)
        return await _report(event, args.wait, args.host)

    return await with_service(args, body)


async def cmd_restart(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        event = await service.restart(wait=args.wait, timeout=args.timeout)
        return await _report(event, args.wait, args.host)

    return await with_service(args, body)


async def cmd_stop(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        await service.stop(timeout=args.timeout)
        print(f"{args.host}: stopped")
        return 0

    return await with_service(args, body)


async def cmd_flags(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        discovered = await service.schema()
        current = (await service.current_config()).flags
        values = {}
        for name, value in current.items():
            spec = discovered.schema.resolve(name)
            values[spec.name if spec else name] = value
        if args.json:
            print(
                json.dumps(
                    {
                        "host": args.host,
                        "engine": service.profile.engine,
                        "source": discovered.schema.source,
                        "roles": discovered.roles,
                        "current": values,
                        "flags": [s.as_dict() for s in discovered.schema],
                    },
                    indent=2,
                )
            )
            return 0
        shown = [s for s in discovered.schema if args.all or s.tuned or s.name in values]
        print(f"{args.host}: {service.profile.engine} flags from {discovered.schema.source}")
        for spec in shown:
            current_text = json.dumps(values[spec.name]) if spec.name in values else "-"
            kind = "{" + ",".join(spec.choices) + "}" if spec.choices else spec.type
            print(f"  --{spec.name} = {current_text}   [{kind}, default {spec.default}]")
            for note_line in textwrap.wrap(spec.note or spec.help, 88):
                print(f"      {note_line}")
        hidden = len(discovered.schema.flags) - len(shown)
        if hidden:
            print(f"  ({hidden} more flags; --all lists them)")
        return 0

    return await with_service(args, body)


async def cmd_set(args: argparse.Namespace) -> int:
    changes = parse_assignments(args.assignments)

    async def body(service: EngineService) -> int:
        plan = await service.plan(changes)
        for notice in plan.notices:
            err(f"  note: {notice}")
        if not plan.changed:
            print(f"{args.host}: no change (the flags already have these values)")
            return 0
        print(plan.diff)
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
        rows = None
        if args.baseline:
            done = await apply_with_baseline(
                service, plan, timeout=args.timeout, store=RunStore.default(),
                on_note=lambda t: err(f"  {t}"),
            )  # fmt: skip
            result, rows = done.result, done.rows
        else:
            result = await service.apply(plan, timeout=args.timeout)
        if result.ok:
            print(f"{args.host}: ready with the new flags")
            for line in comparison_lines(rows) if rows else ():
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
        store = await service.store()
        current, last_good = await store.current(), await store.last_good()
        if current is not None and last_good is not None:
            diff = unified_diff(current.flags, last_good.flags, f"{args.host}:launch.json")
            print(diff or "(the last-good flags equal the current ones; restarting with them)")
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


# -- profiles ---------------------------------------------------------------------------


async def cmd_hosts(args: argparse.Namespace) -> int:
    action = args.hosts_action
    if action == "list":
        for name in profiles.list_profile_names():
            p = profiles.load_profile(name)
            where = p.ssh.destination if p.ssh else "this machine"
            builtin = (
                " (built in)"
                if name == profiles.LOCAL and not (profiles.hosts_dir() / "local.toml").exists()
                else ""
            )
            print(
                f"{name}{builtin}: {p.engine} on {where}, "
                f"{p.supervisor.kind} supervisor, port {p.port}"
            )
        return 0
    if action == "show":
        p = profiles.load_profile(args.name)
        if args.json:
            print(json.dumps(p.model_dump(mode="json"), indent=2))
        else:
            print(f"# {args.name}")
            print(profiles.profile_to_toml(p) or "# (all defaults)")
        return 0
    if action == "remove":
        path = profiles.remove_profile(args.name)
        print(f"removed {args.name} ({path})")
        return 0
    if action == "add":
        data: dict[str, object] = {"engine": args.engine}
        if args.ssh:
            ssh: dict[str, object] = {"destination": args.ssh}
            if args.ssh_config:
                ssh["config"] = [args.ssh_config]
            if args.identity_file:
                ssh["identity_file"] = [args.identity_file]
            if args.known_hosts:
                ssh["known_hosts"] = [args.known_hosts]
            data["ssh"] = ssh
        launch = {k: v for k, v in (("python", args.python), ("venv", args.venv)) if v}
        if args.command:
            launch["command"] = args.command
        if args.env:
            launch["env"] = dict(_split_pair(e, "--env") for e in args.env)
        if launch:
            data["launch"] = launch
        supervisor = {"kind": args.supervisor}
        if args.unit:
            supervisor["unit"] = args.unit
        if args.sudo:
            supervisor["sudo"] = True
        data["supervisor"] = supervisor
        for key in ("port", "model_path", "draft_model_path", "state_dir"):
            if getattr(args, key) is not None:
                data[key] = getattr(args, key)
        if args.flag:
            data["flags"] = dict(_split_pair(f, "--flag") for f in args.flag)
        profile = profiles.parse_profile(args.name, data, f"Host profile {args.name!r}")
        path = profiles.save_profile(profile, overwrite=args.force)
        print(f"added {args.name} ({path})")
        return 0
    raise AssertionError(action)


def _split_pair(text: str, option: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"{option} {text!r} is not KEY=VALUE.")
    return key, value


# -- parser -----------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="specconsole",
        description="Operator console for speculative-decoding inference services.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def host_command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("host", help="host profile name (`local` is built in)")
        p.add_argument(
            "--accept-new-host-key",
            action="store_true",
            help="trust an unknown SSH host key without asking (a changed key is still refused)",
        )
        return p

    def wait_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for ready")

    p = host_command("status", "Show the service state: stopped, starting, loading, ready, failed.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    for name, func, text in (
        ("start", cmd_start, "Start the engine service."),
        ("restart", cmd_restart, "Stop and start the engine service."),
    ):
        p = host_command(name, text)
        p.add_argument("--wait", action="store_true", help="follow it until ready or failed")
        wait_options(p)
        p.set_defaults(func=func)

    p = host_command("stop", "Stop the engine service (SIGTERM, then SIGKILL after --timeout).")
    p.add_argument("--timeout", type=float, default=20.0)
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
    wait_options(p)
    p.set_defaults(func=cmd_set)

    p = host_command("rollback", "Restore the last-good flags, restart and wait for ready.")
    wait_options(p)
    p.set_defaults(func=cmd_rollback)

    p = host_command("logs", "Print the engine's log (the current run).")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    p.add_argument("--grep", metavar="RE", help="only lines matching this regular expression")
    p.add_argument("-n", "--lines", type=int, default=200, help="how many recent lines")
    p.set_defaults(func=cmd_logs)

    hosts = sub.add_parser("hosts", help="Manage host profiles.")
    hsub = hosts.add_subparsers(dest="hosts_action", required=True, parser_class=Parser)
    hsub.add_parser("list", help="List host profiles.")
    show = hsub.add_parser("show", help="Show one profile.")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    remove = hsub.add_parser("remove", help="Delete a profile.")
    remove.add_argument("name")
    add = hsub.add_parser("add", help="Add a host profile.")
    add.add_argument("name")
    add.add_argument(
        "--ssh", metavar="DEST", help="ssh destination (alias, host, user@host[:port])"
    )
    add.add_argument("--ssh-config", help="ssh config file (default ~/.ssh/config)")
    add.add_argument("--identity-file", help="private key file")
    add.add_argument("--known-hosts", help="known_hosts file (default ~/.ssh/known_hosts)")
    add.add_argument("--engine", choices=["builtin", "sglang", "vllm"], default="builtin")
    launcher = add.add_mutually_exclusive_group()
    launcher.add_argument("--python", help="python interpreter on the host that has the engine")
    launcher.add_argument("--venv", help="virtualenv directory on the host")
    launcher.add_argument("--command", help="full launch command, e.g. 'vllm serve'")
    add.add_argument("--env", action="append", metavar="KEY=VALUE", help="environment variable")
    add.add_argument("--supervisor", choices=["process", "systemd"], default="process")
    add.add_argument("--unit", help="systemd unit name")
    add.add_argument("--sudo", action="store_true", help="use sudo -n for systemd")
    add.add_argument("--port", type=int)
    add.add_argument("--model-path")
    add.add_argument("--draft-model-path")
    add.add_argument("--state-dir", help="state directory on the host")
    add.add_argument("--flag", action="append", metavar="KEY=VALUE", help="initial engine flag")
    add.add_argument("--force", action="store_true", help="overwrite an existing profile")
    hosts.set_defaults(func=cmd_hosts)

    # Each area registers its own commands (one module each, sharing `commands.base`).
    for module in (measure_commands, live_commands, history_commands, ui_commands, web_commands):
        module.register(sub, host_command)
    breakeven_commands.register(sub, host_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(args.func(args))
    except ConsoleError as exc:
        err(f"specconsole: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err("specconsole: interrupted.")
        return 130
    except BrokenPipeError:
        # `specconsole flags gpu1 | head`: the reader left; that is not an error.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("SPECCONSOLE_DEBUG"):
            raise
        err(
            f"specconsole: internal error ({type(exc).__name__}: {exc}); "
            "rerun with SPECCONSOLE_DEBUG=1 for details."
        )
        return 70


if __name__ == "__main__":
    sys.exit(main())
