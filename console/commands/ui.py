"""`specconsole connect [HOST]`: the terminal console.

HOST may be a profile name (`local` is built in), an ssh destination (`user@gpu1`,
`gpu1:2222`) or a Host alias from ~/.ssh/config; the last two get a session-only profile
with the default engine settings (save one with `specconsole hosts add` to keep it).
Without HOST the console opens on a picker of profiles and ssh-config hosts.

This module has no Textual import (the console core must not): the app is imported
only when `connect` runs. Host resolution lives here, not in the TUI, so a screen holds
no logic the CLI lacks.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from console import config as profiles
from console.commands.base import HostCommand
from console.config import HostProfile, SSHProfile
from console.errors import ConfigError


def ssh_config_hosts(path: Path | None = None) -> list[str]:
    """Concrete `Host` aliases of an ssh config file (patterns with * ? ! are skipped)."""
    path = path or Path(os.path.expanduser("~/.ssh/config"))
    try:
        text = path.read_text()
    except OSError:
        return []
    hosts: list[str] = []
    for line in text.splitlines():
        words = line.strip().split()
        if len(words) >= 2 and words[0].lower() == "host":
            for word in words[1:]:
                if not any(c in word for c in "*?!") and word not in hosts:
                    hosts.append(word)
    return hosts


def _session_name(destination: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", destination).strip("-.")[:64]
    return name or "ssh-host"


def resolve_host(host: str) -> HostProfile:
    """A profile for what the user typed: a saved profile first, then an ssh destination."""
    if host in profiles.list_profile_names():
        return profiles.load_profile(host)
    looks_ssh = "@" in host or ":" in host or host in ssh_config_hosts()
    if not looks_ssh:
        known = ", ".join(profiles.list_profile_names())
        raise ConfigError(
            f"{host!r} is neither a host profile (known: {known}) nor a Host in "
            "~/.ssh/config; use user@host for an ssh destination."
        )
    return HostProfile(name=_session_name(host), ssh=SSHProfile(destination=host))


def connect_targets() -> list[tuple[str, str]]:
    """(target, description) for the picker: profiles, then ssh-config hosts."""
    out: list[tuple[str, str]] = []
    names = profiles.list_profile_names()
    for name in names:
        try:
            p = profiles.load_profile(name)
        except ConfigError as exc:
            out.append((name, f"profile (invalid: {exc})"))
            continue
        where = p.ssh.destination if p.ssh else "this machine"
        out.append((name, f"profile: {p.engine} on {where}, port {p.port}"))
    out += [(alias, "~/.ssh/config host") for alias in ssh_config_hosts() if alias not in names]
    return out


async def cmd_connect(args: argparse.Namespace) -> int:
    if args.host:
        resolve_host(args.host)  # a typo is one sentence here, before the screen is taken
    from console.tui.app import run_console  # Textual is imported only here

    return await run_console(
        host=args.host, theme=args.theme, accept_new_host_key=args.accept_new_host_key
    )


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add `connect` to the `specconsole` parser."""
    p = sub.add_parser(
        "connect",
        help="Open the terminal console on a host.",
        description="Open the terminal console on a host (profile, user@host or ssh alias); "
        "without HOST, pick one. Quitting leaves the engine service running.",
    )
    p.add_argument("host", nargs="?", help="profile name, user@host or ~/.ssh/config alias")
    p.add_argument("--theme", help="theme name (dark, light, high-contrast, ...); remembered")
    p.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="trust an unknown SSH host key without asking (a changed key is still refused)",
    )
    p.set_defaults(func=cmd_connect)
