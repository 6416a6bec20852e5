"""The `local` transport: the same protocol as SSH, on this machine."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from console.transport import CommandTimeout, LocalTransport, Transport


async def test_run_argv_and_script() -> None:
    t = LocalTransport()
    assert isinstance(t, Transport)
    result = await t.run(["echo", "a b", "$HOME"])
    assert (result.exit_code, result.stdout) == (0, "a b $HOME\n")
    result = await t.run("echo out; echo err >&2; exit 3")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.last_line() == "err"
    assert (await t.run(["cat"], input="fed")).stdout == "fed"
    assert (await t.run(["/no/such/binary"])).exit_code == 127


async def test_timeout_kills_the_command_and_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    with pytest.raises(CommandTimeout, match=r"did not finish within 0\.5 s"):
        await LocalTransport().run(f"sleep 30 & echo $! > {marker}; wait", timeout=0.5)
    pid = int(marker.read_text())
    for _ in range(50):  # the group was SIGKILLed; give the kernel a moment
        state = Path(f"/proc/{pid}/stat")
        if not state.exists() or state.read_text().split(") ")[1][0] in "ZX":
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("the child of a timed-out command is still running")


async def test_stream_yields_lines_and_stops_the_command_when_abandoned(tmp_path: Path) -> None:
    t = LocalTransport()
    assert [line async for line in t.stream("printf 'a\\nb\\r\\nc'")] == ["a", "b", "c"]
    pidfile = tmp_path / "pid"
    gen = t.stream(f"echo $$ > {pidfile}; echo first; exec sleep 30")
    assert await anext(gen) == "first"
    await gen.aclose()
    pid = int(pidfile.read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().split(") ")[1][0] in "ZX"


async def test_atomic_write_and_read(tmp_path: Path) -> None:
    t = LocalTransport()
    target = tmp_path / "deep" / "dir" / "launch.json"
    await t.write_file(str(target), b"one", mode=0o600)
    await t.write_file(str(target), b"two")
    assert await t.read_file(str(target)) == b"two"
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in target.parent.iterdir()] == ["launch.json"]  # no temp left over
    with pytest.raises(FileNotFoundError):
        await t.read_file(str(tmp_path / "missing"))


async def test_forward_is_the_port_itself_and_home() -> None:
    t = LocalTransport()
    async with t.forward(30000) as port:
        assert port == 30000
    assert await t.home() == os.path.expanduser("~")
