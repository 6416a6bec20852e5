"""The SSH transport against a real OpenSSH server on loopback (see sshd.py)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import asyncssh
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.errors import TransportError
from console.settings import Backoff
from console.transport import (
    CommandTimeout,
    HostKeyChanged,
    HostKeyInfo,
    SSHOptions,
    SSHTransport,
    Transport,
    UnknownHostKey,
)
from tests.console.sshd import SSHServer
from tests.ports import free_port

pytestmark = pytest.mark.timeout(120)


async def test_run_argv_script_and_input(ssh_options: SSHOptions) -> None:
    t = SSHTransport(ssh_options, name="gpu-test")
    try:
        assert isinstance(t, Transport)
        result = await t.run(["echo", "a  b", "$HOME", "it's"])
        assert (result.exit_code, result.stdout) == (0, "a  b $HOME it's\n")
        result = await t.run("echo out; echo err >&2; exit 7")
        assert (result.exit_code, result.stdout, result.stderr) == (7, "out\n", "err\n")
        assert (await t.run(["cat"], input="fed")).stdout == "fed"
        assert await t.home() == "/root"
    finally:
        await t.close()


@settings(
    max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
async def test_argv_reaches_the_host_verbatim(ssh_options: SSHOptions, data: st.DataObject) -> None:
    # One connection, many drawn argument lists: the remote login shell must see each
    # element as exactly one word, whatever characters it holds.
    text = st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        max_size=30,
    )
    t = SSHTransport(ssh_options)
    try:
        for _ in range(25):
            args = data.draw(st.lists(text, min_size=1, max_size=4))
            result = await t.run(["printf", "%s\\0", *args])
            assert result.stdout.split("\0")[:-1] == args
    finally:
        await t.close()


async def test_stream_lines_then_exit(ssh_options: SSHOptions) -> None:
    t = SSHTransport(ssh_options)
    try:
        lines = [
            line async for line in t.stream("for i in 1 2 3; do echo line$i; done; echo e >&2")
        ]
        assert lines == ["line1", "line2", "line3", "e"]
    finally:
        await t.close()


async def test_abandoned_stream_stops_the_remote_command(
    ssh_options: SSHOptions, tmp_path: Path
) -> None:
    t = SSHTransport(ssh_options)
    pidfile = tmp_path / "tail.pid"
    try:
        gen = t.stream(f"echo $$ > {pidfile}; echo started; exec sleep 60")
        assert await anext(gen) == "started"
        await gen.aclose()
        pid = int(pidfile.read_text())
        for _ in range(100):
            stat = Path(f"/proc/{pid}/stat")
            if not stat.exists() or stat.read_text().split(") ")[1][0] in "ZX":
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the remote command kept running after the stream was closed")
    finally:
        await t.close()


async def test_sftp_atomic_write_read(ssh_options: SSHOptions, tmp_path: Path) -> None:
    t = SSHTransport(ssh_options)
    target = tmp_path / "state" / "svc" / "launch.json"
    try:
        await t.write_file(str(target), b'{"v": 1}', mode=0o600)
        assert oct(target.stat().st_mode & 0o777) == "0o600"
        await t.write_file(str(target), b'{"v": 2}')
        assert await t.read_file(str(target)) == b'{"v": 2}'
        assert target.read_bytes() == b'{"v": 2}'
        assert sorted(p.name for p in target.parent.iterdir()) == ["launch.json"]
        with pytest.raises(FileNotFoundError):
            await t.read_file(str(tmp_path / "nope.json"))
    finally:
        await t.close()


async def test_forward_reaches_an_http_server_on_the_host(ssh_options: SSHOptions) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    t = SSHTransport(ssh_options)
    try:
        async with t.forward(port) as local_port, httpx.AsyncClient(trust_env=False) as client:
            assert local_port != port
            response = await client.get(f"http://127.0.0.1:{local_port}/health", timeout=10)
            assert (response.status_code, response.text) == (200, "ok")
    finally:
        await t.close()
        server.close()


async def test_changed_host_key_is_refused_with_fingerprint(
    ssh_options: SSHOptions, sshd_server: SSHServer
) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    Path(ssh_options.known_hosts[0]).write_text(f"[127.0.0.1]:{sshd_server.port} {other}\n")
    asked: list[HostKeyInfo] = []

    async def confirm(info: HostKeyInfo) -> bool:
        asked.append(info)
        return True

    t = SSHTransport(ssh_options, confirm_host_key=confirm)
    with pytest.raises(HostKeyChanged) as err:
        await t.run(["true"])
    server_key = asyncssh.import_public_key(sshd_server.host_key_pub)
    assert server_key.get_fingerprint("sha256") in str(err.value)
    assert "refusing" in str(err.value) and asked == []  # never offered for confirmation
    await t.close()


async def test_unknown_host_key_needs_confirmation(
    ssh_options: SSHOptions, sshd_server: SSHServer
) -> None:
    known = Path(ssh_options.known_hosts[0])
    known.write_text("")
    fingerprint = asyncssh.import_public_key(sshd_server.host_key_pub).get_fingerprint("sha256")

    t = SSHTransport(ssh_options)  # no way to confirm: refused, fingerprint shown
    with pytest.raises(UnknownHostKey) as err:
        await t.run(["true"])
    assert fingerprint in str(err.value) and "--accept-new-host-key" in str(err.value)

    async def decline(info: HostKeyInfo) -> bool:
        return False

    with pytest.raises(UnknownHostKey):
        await SSHTransport(ssh_options, confirm_host_key=decline).run(["true"])
    assert known.read_text() == ""

    asked: list[HostKeyInfo] = []

    async def accept(info: HostKeyInfo) -> bool:
        asked.append(info)
        return True

    t = SSHTransport(ssh_options, confirm_host_key=accept)
    assert (await t.run(["true"])).ok
    await t.close()
    assert [a.fingerprint for a in asked] == [fingerprint]
    assert asked[0].known_hosts_name == f"[127.0.0.1]:{sshd_server.port}"
    assert known.read_text().strip() == f"[127.0.0.1]:{sshd_server.port} {sshd_server.host_key_pub}"
    # Recorded: the next connection needs no confirmation.
    t = SSHTransport(ssh_options)
    assert (await t.run(["true"])).ok
    await t.close()


async def test_proxyjump_goes_through_a_second_hop(ssh_options: SSHOptions) -> None:
    t = SSHTransport(dataclasses.replace(ssh_options, destination="jumped"))
    try:
        assert (await t.run(["echo", "via jump"])).stdout == "via jump\n"
        assert len(t.link.conns) == 2  # the jump host, then the destination through it
    finally:
        await t.close()


async def test_timeout_ends_the_remote_command_and_the_connection_still_works(
    ssh_options: SSHOptions, tmp_path: Path
) -> None:
    t = SSHTransport(ssh_options)
    pidfile = tmp_path / "slow.pid"
    try:
        # connected first, so the timeout covers the command, not the handshake; 2 s
        # leaves a loaded CI host time to start the remote shell that writes the pid
        assert (await t.run(["true"])).ok
        with pytest.raises(CommandTimeout, match=r"within 2 s"):
            await t.run(f"echo $$ > {pidfile}; exec sleep 30", timeout=2)
        pid = int(pidfile.read_text())
        for _ in range(100):
            stat = Path(f"/proc/{pid}/stat")
            if not stat.exists() or stat.read_text().split(") ")[1][0] in "ZX":
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the timed-out command kept running on the host")
        assert (await t.run(["echo", "still here"])).stdout == "still here\n"
    finally:
        await t.close()


async def test_unreachable_host_and_refused_login(ssh_options: SSHOptions, tmp_path: Path) -> None:
    closed = dataclasses.replace(
        ssh_options, destination=f"root@127.0.0.1:{free_port()}",
        reconnect_attempts=2, backoff=Backoff(start_s=0.05),
    )  # fmt: skip
    with pytest.raises(TransportError, match=r"Could not reach .* Gave up after 2 attempts"):
        await SSHTransport(closed).run(["true"])
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    stranger.write_private_key(tmp_path / "stranger")
    wrong_key = dataclasses.replace(ssh_options, client_keys=[str(tmp_path / "stranger")])
    with pytest.raises(TransportError, match="SSH login to testhost was refused"):
        await SSHTransport(wrong_key).run(["true"])
