"""`specconsole hosts list|show|add|remove`: the host profiles on this machine."""

from __future__ import annotations

import argparse
import json

from console import config as profiles
from console.backends import ADAPTERS
from console.commands.base import HostCommand, Parser
from console.commands.sampling_options import add_sampling_options, given_sampling
from console.errors import ConfigError


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
                f"{p.supervisor.kind} supervisor, port {p.port}, sampling {p.sampling.label}"
            )
        return 0
    if action == "show":
        p = profiles.load_profile(args.name)
        if args.json:
            print(json.dumps({**p.model_dump(mode="json"), "launcher": p.interpreter_note},
                             indent=2))  # fmt: skip
        else:
            print(f"# {args.name}")
            print(f"# engine launcher: {p.interpreter_note}")
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
        if given_sampling(args):  # validated with the rest of the profile, before saving
            data["sampling"] = given_sampling(args)
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


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `hosts` and its actions to the `specconsole` parser."""
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
    add.add_argument("--engine", choices=sorted(ADAPTERS), default="builtin")
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
    add_sampling_options(add, what="every measurement on this host")
    hosts.set_defaults(func=cmd_hosts)
