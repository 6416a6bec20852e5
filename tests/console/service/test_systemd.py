"""systemd units: rendered text checked by `systemd-analyze verify`, ExecStart quoting,
`systemctl show` states, and the commands the supervisor sends (systemd cannot run here,
so a recording transport answers in systemctl's real output format)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.config import SupervisorProfile
from console.service.launch import LaunchConfig, ServiceFiles
from console.service.systemd import SystemdSupervisor, parse_show, state_from_show
from console.service.unit import exec_start, quote_word, render_dropin, render_unit
from console.transport.base import Command, CommandResult, as_script

ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze not installed")

NASTY = ["a b", 'say "hi"', "$HOME", "${PATH}", "%h %n 100%", "back\\slash", "it's", "tab\there",
         "new\nline", "{\"method\": \"dflash\", \"num_speculative_tokens\": 15}", ";rm -rf /",
         ""]  # fmt: skip


def _config(argv: list[str] | None = None, **kw) -> LaunchConfig:
    argv = argv or [sys.executable, "-m", "engine.cli", "serve", "--port", "30000"]
    return LaunchConfig("builtin", {}, argv, **kw)


def _verify(unit_dir: Path, unit: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SYSTEMD_UNIT_PATH": f"{unit_dir}:"}
    return subprocess.run(
        [ANALYZE, "verify", str(unit_dir / unit)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@needs_analyze
@pytest.mark.parametrize("user_scope", [False, True])
def test_rendered_unit_verifies(tmp_path: Path, user_scope: bool) -> None:
    config = _config(
        [sys.executable, "-m", "engine.cli", "serve", "--served-model-name", *NASTY],
        env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1", "ODD": "x $y %z"},
        workdir=str(tmp_path),
    )
    (tmp_path / "gpu1.service").write_text(render_unit(config, "gpu1", user_scope=user_scope))
    result = _verify(tmp_path, "gpu1.service")
    assert result.returncode == 0, result.stderr


@needs_analyze
def test_verify_catches_a_missing_binary(tmp_path: Path) -> None:
    # Proves the check is real: a unit systemd would refuse fails verification.
    (tmp_path / "bad.service").write_text(render_unit(_config(["/nonexistent/python"]), "bad"))
    result = _verify(tmp_path, "bad.service")
    assert result.returncode != 0 and "/nonexistent/python" in result.stderr


@needs_analyze
def test_dropin_replaces_execstart_and_verifies(tmp_path: Path) -> None:
    (tmp_path / "sglang.service").write_text(
        "[Unit]\nDescription=site unit\n[Service]\nExecStart=/bin/true\n"
    )
    dropin = tmp_path / "sglang.service.d"
    dropin.mkdir()
    (dropin / "specconsole.conf").write_text(render_dropin(_config(), "gpu1"))
    assert _verify(tmp_path, "sglang.service").returncode == 0
    # Without the `ExecStart=` reset the unit would have two and systemd refuses it.
    text = render_dropin(_config(), "gpu1").replace("ExecStart=\n", "")
    (dropin / "specconsole.conf").write_text(text)
    assert _verify(tmp_path, "sglang.service").returncode != 0


def systemd_unquote(line: str) -> list[str]:
    """systemd's reading of an ExecStart= value (extract_first_word with UNQUOTE|CUNESCAPE,
    then specifier and $-variable expansion), for the subset our quoting produces."""
    words: list[str] = []
    i = 0
    escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        assert line[i] == '"', line[i:]
        i += 1
        word = []
        while line[i] != '"':
            ch = line[i]
            if ch == "\\":
                nxt = line[i + 1]
                if nxt == "x":
                    word.append(chr(int(line[i + 2 : i + 4], 16)))
                    i += 4
                    continue
                word.append(escapes[nxt])
                i += 2
                continue
            if ch in "%$":
                assert line[i + 1] == ch, "a lone % or $ would be expanded by systemd"
                word.append(ch)
                i += 2
                continue
            word.append(ch)
            i += 1
        words.append("".join(word))
        i += 1
    return words


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
        min_size=1,
        max_size=5,
    )
)
def test_execstart_quoting_round_trips(argv: list[str]) -> None:
    line = exec_start(argv)
    assert "\n" not in line  # one line in the unit file, whatever the values
    assert systemd_unquote(line) == argv


def test_quote_word_examples() -> None:
    assert quote_word("a b") == '"a b"'
    assert quote_word("$HOME 100%") == '"$$HOME 100%%"'
    assert quote_word('x"y\\z') == '"x\\"y\\\\z"'
    assert quote_word("\x01") == '"\\x01"'


SHOW = {
    "running": (
        "ActiveState=active\nSubState=running\nMainPID=4242\n"
        "ExecMainStatus=0\nExecMainCode=0\nResult=success\n"
    ),
    "starting": (
        "ActiveState=activating\nSubState=start\nMainPID=4242\n"
        "ExecMainStatus=0\nExecMainCode=0\nResult=success\n"
    ),
    "failed": (
        "ActiveState=failed\nSubState=failed\nMainPID=0\n"
        "ExecMainStatus=2\nExecMainCode=1\nResult=exit-code\n"
    ),
    "killed": (
        "ActiveState=failed\nSubState=failed\nMainPID=0\n"
        "ExecMainStatus=9\nExecMainCode=2\nResult=signal\n"
    ),
    "stopped": (
        "ActiveState=inactive\nSubState=dead\nMainPID=0\n"
        "ExecMainStatus=0\nExecMainCode=0\nResult=success\n"
    ),
}


def test_states_from_systemctl_show() -> None:
    assert state_from_show(parse_show(SHOW["running"])).state == "running"
    assert state_from_show(parse_show(SHOW["running"])).pid == 4242
    assert state_from_show(parse_show(SHOW["starting"])).state == "running"
    failed = state_from_show(parse_show(SHOW["failed"]))
    assert (failed.state, failed.exit_code) == ("exited", 2)
    assert state_from_show(parse_show(SHOW["killed"])).exit_code == 128 + 9
    assert state_from_show(parse_show(SHOW["stopped"])).state == "stopped"


class RecordingTransport:
    """Answers systemctl/journalctl like a host would; records every command and file."""

    name = "gpu1"

    def __init__(self, show: str = SHOW["running"]) -> None:
        self.commands: list[str] = []
        self.files: dict[str, bytes] = {}
        self.show = show

    async def run(
        self, cmd: Command, *, input: str | None = None, timeout: float | None = 60.0
    ) -> CommandResult:
        text = as_script(cmd)
        self.commands.append(text)
        if " show " in text:
            return CommandResult(0, self.show, "")
        if text.startswith("date"):
            return CommandResult(0, "1767225600\n", "")
        if "journalctl" in text:
            return CommandResult(0, "line 1\nline 2\n", "")
        return CommandResult(0, "", "")

    async def stream(self, cmd: Command) -> AsyncIterator[str]:
        self.commands.append(as_script(cmd))
        yield "streamed"

    async def read_file(self, path: str) -> bytes:
        return self.files[path]

    async def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self.files[path] = data

    @asynccontextmanager
    async def forward(self, port: int, host: str = "127.0.0.1") -> AsyncIterator[int]:
        yield port

    async def home(self) -> str:
        return "/home/ops"

    async def close(self) -> None:
        return None


async def test_supervisor_installs_reloads_starts_and_reads_state() -> None:
    t = RecordingTransport()
    files = ServiceFiles("/home/ops/.local/state/specconsole/gpu1")
    sup = SystemdSupervisor(t, files, SupervisorProfile(kind="systemd"), "sglang.service", "gpu1")
    await sup.start(_config())
    assert "/etc/systemd/system/sglang.service" in t.files
    assert t.commands == [
        "systemctl daemon-reload", "date +%s", "systemctl reset-failed sglang.service",
        "systemctl start sglang.service",
    ]  # fmt: skip
    assert (await sup.state()).state == "running"
    assert [line async for line in sup.follow_logs(backlog=None)] == ["streamed"]
    assert t.commands[-1] == "journalctl -u sglang.service -o cat --no-pager --since @1767225600 -f"
    assert await sup.log_tail(2) == ["line 1", "line 2"]
    await sup.stop()
    assert t.commands[-1] == "systemctl stop sglang.service"


async def test_user_scope_dropin_and_sudo_commands() -> None:
    t = RecordingTransport(SHOW["failed"])
    files = ServiceFiles("/home/ops/.local/state/specconsole/gpu1")
    dropin = SupervisorProfile(kind="systemd", scope="user", mode="dropin")
    user = SystemdSupervisor(t, files, dropin, "sglang.service", "gpu1")
    await user.install(_config())
    assert "/home/ops/.config/systemd/user/sglang.service.d/specconsole.conf" in t.files
    assert "systemctl --user daemon-reload" in t.commands
    assert (await user.state()).exit_code == 2

    t = RecordingTransport()
    root = SystemdSupervisor(
        t, files, SupervisorProfile(kind="systemd", sudo=True), "sglang.service", "gpu1"
    )
    await root.install(_config())
    # Staged in our own dir, moved into /etc by root in one rename; never written directly.
    assert list(t.files) == ["/home/ops/.local/state/specconsole/gpu1/sglang.service"]
    assert t.commands[0].startswith("sudo -n sh -c ")
    assert (
        "mv -f /etc/systemd/system/sglang.service.specconsole.tmp "
        "/etc/systemd/system/sglang.service" in t.commands[0]
    )
    assert t.commands[1] == "sudo -n systemctl daemon-reload"
