"""Host resolution: what the user typed (a profile, `user@host`, `host:port`, an ssh-config
alias, `local`) becomes a `HostProfile`, the same way for every command and the TUI.

A saved profile wins; an ssh destination or a Host alias from ~/.ssh/config gets a
session-only profile with the default engine settings (`specconsole hosts add` keeps one).
Living here, below both faces, is what makes `status user@host` resolve exactly as
`connect user@host` does.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from console import config as profiles
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
        # Both phrasings on purpose: it is what `load_profile` says for a missing
        # profile, and why an ssh destination was not assumed either.
        raise ConfigError(
            f"No host profile named {host!r} (known: {known}): it is neither a host profile "
            "nor a Host in ~/.ssh/config; use user@host for an ssh destination."
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
