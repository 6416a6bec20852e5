"""The headless CLI: profiles, one-sentence errors, host-key confirmation, connect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from console import cli
from console.config import load_profile
from tests.console.sshd import SSHServer


def run_cli(*args: str) -> subprocess.CompletedProcess:
    # A real process: proves the entry point, exit codes and that nothing tracebacks.
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_hosts_add_list_show_remove(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([
        "hosts", "add", "gpu1", "--ssh", "ops@gpu1", "--engine", "sglang", "--venv", "/opt/sglang",
        "--supervisor", "systemd", "--unit", "sglang", "--model-path", "/models/q",
        "--env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", "--flag", "page-size=1",
    ]) == 0  # fmt: skip
    profile = load_profile("gpu1")
    assert profile.ssh.destination == "ops@gpu1" and profile.launch.venv == "/opt/sglang"
    assert profile.unit_name == "sglang.service" and profile.flags == {"page-size": "1"}
    capsys.readouterr()
    assert cli.main(["hosts", "list"]) == 0
    listing = capsys.readouterr().out
    assert "gpu1: sglang on ops@gpu1, systemd supervisor" in listing
    assert "local (built in): builtin on this machine" in listing
    assert cli.main(["hosts", "show", "gpu1"]) == 0
    assert 'destination = "ops@gpu1"' in capsys.readouterr().out
    assert cli.main(["hosts", "remove", "gpu1"]) == 0
    assert cli.main(["hosts", "show", "gpu1"]) == cli.EXIT_ERROR


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["status", "nope"], "No host profile named 'nope'"),
        (["hosts", "add", "x y"], "name: Value error, use letters"),
        (["hosts", "add", "v", "--port", "0"], "invalid: port:"),
        (["set", "local", "context-length"], "is not key=value"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["logs", "local", "--grep", "("], "not a valid regular expression"),
    ],
)
def test_errors_are_one_sentence_without_traceback(
    args: list[str], needle: str, tmp_path: Path
) -> None:
    if args[0] == "logs":  # needs a state dir that is not the developer's
        (tmp_path / "config" / "hosts").mkdir(parents=True, exist_ok=True)
        (tmp_path / "config" / "hosts" / "local.toml").write_text(f'state_dir = "{tmp_path}/s"\n')
    result = run_cli(*args)
    assert result.returncode != 0
    assert needle in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def _ssh_profile(tmp_path: Path, server: SSHServer, known: Path) -> None:
    hosts = tmp_path / "config" / "hosts"
    hosts.mkdir(parents=True, exist_ok=True)
    (hosts / "lab.toml").write_text(
        f"""state_dir = "{tmp_path}/state"
[ssh]
destination = "testhost"
config = ["{server.ssh_config}"]
known_hosts = ["{known}"]
identity_file = ["{server.client_key}"]
use_agent = false
[launch]
python = "{sys.executable}"
"""
    )


def test_unknown_host_key_needs_the_flag_when_not_interactive(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    _ssh_profile(tmp_path, sshd_server, known)
    refused = run_cli("status", "lab")
    assert refused.returncode != 0 and "--accept-new-host-key" in refused.stderr
    assert "SHA256:" in refused.stderr and known.read_text() == ""
    accepted = run_cli("status", "lab", "--accept-new-host-key")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.startswith("lab: stopped (builtin, process supervisor")
    assert "Trusting new host key" in accepted.stderr
    assert sshd_server.host_key_pub in known.read_text()
    assert run_cli("status", "lab").returncode == 0  # now known


def test_set_without_yes_off_a_terminal_changes_nothing(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(sshd_server.known_hosts_line())
    _ssh_profile(tmp_path, sshd_server, known)
    pytest.importorskip("engine.serve.args", reason="engine server not available")
    result = run_cli("set", "lab", "speculative-draft-window-size=64")
    assert "+--speculative-draft-window-size 64" in result.stdout
    assert result.returncode != 0 and "pass --yes" in result.stderr
    assert not (tmp_path / "state" / "lab" / "launch.json").exists()


def test_status_resolves_an_ssh_destination_as_connect_does(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    # No profile: `status user@host:port` gets the session profile `connect` would, with
    # the key and known_hosts from ~/.ssh/config (HOME is this test's own).
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    known = tmp_path / "known_hosts"
    known.write_text(sshd_server.known_hosts_line())
    (home / ".ssh" / "config").write_text(
        f"Host 127.0.0.1\n    IdentityFile {sshd_server.client_key}\n"
        f"    UserKnownHostsFile {known}\n"
    )
    env = {**os.environ, "HOME": str(home)}
    env.pop("SSH_AUTH_SOCK", None)
    destination = f"root@127.0.0.1:{sshd_server.port}"
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "status", destination],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    session = f"root-127.0.0.1-{sshd_server.port}"
    assert result.stdout.startswith(f"{session}: stopped (builtin, process supervisor")
