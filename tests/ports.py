"""A free TCP port on loopback, for every test that starts a server (one definition)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now; the OS hands a fresh one to each caller."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
