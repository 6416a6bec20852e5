"""Fault injection with an in-process asyncssh server: links that drop or go silent."""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest
import pytest_asyncio

from console.settings import Backoff
from console.transport import LinkLost, SSHOptions, SSHTransport

pytestmark = pytest.mark.timeout(60)


@dataclass
class FaultServer:
    port: int
    options: SSHOptions
    connections: list[asyncssh.SSHServerConnection] = field(default_factory=list)

    def drop_all(self) -> None:
        """The network goes away: connections end without an SSH disconnect message."""
        for conn in self.connections:
            conn.abort()
        self.connections.clear()

    def freeze_all(self) -> None:
        """The link goes silent (no FIN, no data): only keepalives can notice."""
        _FROZEN.set()
        for conn in self.connections:
            conn._transport.pause_reading()


_FROZEN = asyncio.Event()  # a silent link: the server side stops sending too


def _script(command: str) -> str:
    """The script inside the transport's login-shell line (it travels base64-encoded)."""
    found = re.search(r"echo ([A-Za-z0-9+/=]+) \| base64 -d", command)
    return base64.b64decode(found.group(1)).decode() if found else command


async def _behaviour(process: asyncssh.SSHServerProcess) -> None:
    # Dispatch on a word inside the script; answer its output markers first, as sh would
    # (a made-up pid: the transport's kill on an early end reaches this server only).
    command = _script(process.command or "")
    for mark in dict.fromkeys(re.findall(r"__specconsole_[0-9a-f]+__", command)):
        process.stdout.write(f"{mark}4242\n")
        process.stderr.write(f"{mark}4242\n")
    if "ticker" in command:
        for i in range(1000):
            if _FROZEN.is_set():
                await asyncio.sleep(3600)
            process.stdout.write(f"tick {i}\n")
            await asyncio.sleep(0.05)
    elif "hang" in command:
        await asyncio.sleep(3600)
    else:
        process.stdout.write("pong\n")
    process.exit(0)


@pytest_asyncio.fixture
async def fault_server(tmp_path: Path) -> AsyncIterator[FaultServer]:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key.write_private_key(tmp_path / "id")
    server_ref: list[FaultServer] = []

    class Server(asyncssh.SSHServer):
        def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
            server_ref[0].connections.append(conn)

    acceptor = await asyncssh.listen(
        "127.0.0.1", 0,
        server_factory=Server,
        server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(
            client_key.export_public_key().decode()
        ),
        process_factory=_behaviour,
    )  # fmt: skip
    port = acceptor.sockets[0].getsockname()[1]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_key.export_public_key().decode()}")
    options = SSHOptions(
        destination=f"root@127.0.0.1:{port}",
        config_paths=[],
        known_hosts=[str(known)],
        client_keys=[str(tmp_path / "id")],
        use_agent=False,
        connect_timeout=5,
        keepalive_interval=0.2,
        keepalive_count_max=2,
        backoff=Backoff(start_s=0.05),
    )
    _FROZEN.clear()
    server_ref.append(FaultServer(port, options))
    yield server_ref[0]
    acceptor.close()
    await acceptor.wait_closed()


async def test_link_dropped_mid_stream_is_a_clear_error_then_reconnects(
    fault_server: FaultServer,
) -> None:
    t = SSHTransport(fault_server.options, name="gpu-flaky")
    stream = t.stream("ticker")
    assert await anext(stream) == "tick 0"
    fault_server.drop_all()
    with pytest.raises(LinkLost) as err:
        async with asyncio.timeout(10):
            async for _ in stream:
                pass
    assert "connection to gpu-flaky dropped while running `ticker`" in str(err.value)
    assert "reconnect" in str(err.value)
    # The next command opens a fresh connection.
    assert (await t.run("ping")).stdout == "pong\n"
    assert len(fault_server.connections) == 1
    await t.close()


async def test_command_in_flight_fails_when_the_link_drops(fault_server: FaultServer) -> None:
    t = SSHTransport(fault_server.options, name="gpu-flaky")
    task = asyncio.create_task(t.run("hang", timeout=None))
    while not fault_server.connections:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)  # the command is running on the server
    fault_server.drop_all()
    with pytest.raises(LinkLost, match="dropped while running `hang`"):
        await asyncio.wait_for(task, 10)
    assert (await t.run("ping")).ok
    await t.close()


async def test_silent_link_is_detected_by_keepalive(fault_server: FaultServer) -> None:
    t = SSHTransport(fault_server.options, name="gpu-silent")
    stream = t.stream("ticker")
    assert await anext(stream) == "tick 0"
    fault_server.freeze_all()
    with pytest.raises(LinkLost):
        async with asyncio.timeout(15):
            async for _ in stream:
                pass
    assert (await t.run("ping")).ok
    await t.close()
