"""Run the real `specengine serve` as a subprocess on a free port (shared by test_server*.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.ports import free_port

READY = "The server is fired up and ready to roll!"
# SGLang's decode line as the console parses it (console/backends/logparse.py).
SGLANG_DECODE_RE = (
    r"Decode batch(?:\.| \[\d+\],|,) #running-req: (\d+), #token: (\d+), "
    r"token usage: ([\d.]+), (?:accept len: ([\d.]+), )?(?:accept rate: ([\d.]+), )?"
    r".*?gen throughput \(token/s\): ([\d.]+), #queue-req: (\d+)"
)
TIMESTAMP_RE = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] "
# The repository root, not tests/: run from tests/, `-m engine.cli` would import tests/engine.
REPO = Path(__file__).resolve().parents[3]


def serve_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "engine.cli", "serve", *args]


class ServerProcess:
    def __init__(self, target: Path, drafter: Path | None, *extra: str, port: int | None = None):
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        args = ["--model-path", str(target), "--port", str(self.port)]
        if drafter is not None:
            args += ["--speculative-draft-model-path", str(drafter)]
        self.log_file = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            serve_cmd(*args, *extra),
            cwd=REPO,
            env=env,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return Path(self.log_file.name).read_text(errors="replace")

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY in self.log():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.1)
        raise TimeoutError(f"server not ready after {timeout}s:\n{self.log()}")

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=httpx.Timeout(120.0, connect=10.0), **kw)

    def terminate(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def close(self) -> None:
        self.terminate()
        self.log_file.close()
        Path(self.log_file.name).unlink(missing_ok=True)


def sse_events(lines) -> list:
    """Parse SSE `data:` lines into JSON objects, with the literal "[DONE]" kept as a string."""
    out = []
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


def stream(client: httpx.Client, path: str, body: dict) -> list:
    with client.stream("POST", path, json=body) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        return sse_events(r.iter_lines())
