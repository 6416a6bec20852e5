"""A real OpenSSH server on 127.0.0.1 for tests, with generated keys and config.

Nothing here reads the developer's ~/.ssh: the client side gets an ssh_config, a
known_hosts file and a key that live in the fixture's temp dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from tests.ports import free_port

SSHD = "/usr/sbin/sshd"


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited early with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError("sshd did not start listening")


@dataclass
class SSHServer:
    """One running sshd and the client files that trust it."""

    port: int
    root: Path
    host_key_pub: str  # "ssh-ed25519 AAAA..."
    client_key: Path
    ssh_config: Path  # defines `testhost` and `jumped` (ProxyJump testhost)
    known_hosts: Path
    proc: subprocess.Popen
    log: Path

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_key_pub}\n"


@contextlib.contextmanager
def run_sshd(root: Path, extra_config: str = "", *, sftp: bool = True) -> Iterator[SSHServer]:
    """`extra_config`: more sshd_config lines (e.g. `SetEnv PATH=...` for fake tools);
    `sftp=False`: no SFTP subsystem, as on hosts whose sshd was built or set up without."""
    if not os.path.exists(SSHD):
        raise FileNotFoundError(SSHD)
    root.mkdir(parents=True, exist_ok=True)
    # sshd insists on its privilege-separation directory even when it never uses it.
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    host_key.write_private_key(root / "ssh_host_ed25519_key")
    os.chmod(root / "ssh_host_ed25519_key", 0o600)
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key.write_private_key(root / "id_ed25519")
    os.chmod(root / "id_ed25519", 0o600)
    (root / "authorized_keys").write_bytes(client_key.export_public_key())
    port = free_port()
    sshd_config = root / "sshd_config"
    sshd_config.write_text(
        f"""Port {port}
ListenAddress 127.0.0.1
HostKey {root}/ssh_host_ed25519_key
AuthorizedKeysFile {root}/authorized_keys
PidFile {root}/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AllowTcpForwarding yes
{"Subsystem sftp internal-sftp" if sftp else ""}
MaxStartups 100:30:200
MaxSessions 100
LogLevel ERROR
{extra_config}"""
    )
    host_key_pub = host_key.export_public_key("openssh").decode().strip()
    known_hosts = root / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_key_pub}\n")
    ssh_config = root / "ssh_config"
    ssh_config.write_text(
        f"""Host testhost
    HostName 127.0.0.1
    Port {port}
    User root
    IdentityFile {root}/id_ed25519

Host jumped
    HostName 127.0.0.1
    Port {port}
    User root
    IdentityFile {root}/id_ed25519
    ProxyJump testhost
"""
    )
    log = root / "sshd.log"
    with log.open("wb") as log_fh:
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(sshd_config)], stdout=log_fh, stderr=subprocess.STDOUT
        )
    try:
        _wait_listening(port, proc)
        yield SSHServer(
            port=port,
            root=root,
            host_key_pub=host_key_pub,
            client_key=root / "id_ed25519",
            ssh_config=ssh_config,
            known_hosts=known_hosts,
            proc=proc,
            log=log,
        )
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(root, ignore_errors=True)
