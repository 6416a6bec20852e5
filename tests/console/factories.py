"""Records with every field set, for the tests of everything that stores or shows them, and
the host profile of a bundled engine that a test starts for real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from console.analysis.records import LiveSample, RequestSample, RunInfo
from console.config import FlagValue, HostProfile, LaunchProfile, SSHProfile
from tests.ports import free_port

NO_WARMUP: dict[str, FlagValue] = {"skip-server-warmup": True}


def builtin_profile(
    name: str,
    state_dir: Path | str,
    *,
    flags: dict[str, FlagValue] | None = None,
    ssh: SSHProfile | None = None,
    **fields: Any,
) -> HostProfile:
    """The bundled engine as a test starts it: run by this interpreter (so it imports the
    code under test), on a free port, its state in `state_dir`, without the server's
    warm-up request unless `flags` say otherwise; on this machine, or over `ssh`."""
    return HostProfile(
        name=name, engine="builtin", ssh=ssh, launch=LaunchProfile(python=sys.executable),
        port=free_port(), flags=dict(NO_WARMUP if flags is None else flags),
        state_dir=str(state_dir), **fields,
    )  # fmt: skip


def request_sample(
    i: int = 0,
    *,
    context: int = 1024,
    text_type: str = "code",
    tok_s: float = 100.0,
    commit: float = 3.0,
    **changes: Any,
) -> RequestSample:
    """A sample with every field set to something other than its default."""
    values: dict[str, Any] = {
        "engine": "builtin",
        "endpoint": "/generate",
        "text_type": text_type,
        "prompt_id": f"{text_type}-{i}",
        "context_tokens": context,
        "max_tokens": 128,
        "ignore_eos": True,
        "streamed": True,
        "flags_hash": "0123456789ab",
        "completion_tokens": 128,
        "finish_reason": "length",
        "latency_s": 1.5 + i / 7,
        "ttft_s": 0.0421 + i / 1000,
        "decode_time_s": 127 / tok_s,
        "decode_source": "server",
        "verify_steps": 43,
        "decode_tok_s": tok_s,
        "commit_len": commit,
        "step_time_s": commit / tok_s,
        "server_ttft_s": 0.0399,
        "client_decode_tok_s": tok_s * 0.97,
        "decode_context": context + 64.0,
        "repetition": 0.125,
        "rounds": [[float(context), 0.031, 3.0], [context + 3.0, 0.032, 4.0]],
        "spec": {"source": "sglang meta_info", "verify_steps": 43, "histogram": [1, 2, 40]},
        "spec_source": "sglang meta_info",
        "output_ids": [11, 12, 13, 14, 15, 16, 17],
        "flagged": None,
        "retried": True,
        "text": 'def f():\n    return "a, b"\n',
        "t": 1_700_000_000.25 + i,
    }
    values.update(changes)
    return RequestSample(**values)


def live_sample(i: int = 0, **changes: Any) -> LiveSample:
    values: dict[str, Any] = {
        "t": 1_700_000_100.5 + i,
        "source": "log",
        "tok_s": 120.0 + i,
        "commit_len": 3.25,
        "step_time_s": 0.027,
        "context_tokens": 2048 + i,
        "queue": 2,
        "running": 1,
        "note": f"point {i}",
        "spec_source": "vllm:spec_decode counters",
        "per_position": [0.9, 0.75, 0.5],
        "batch": 1.5,
    }
    values.update(changes)
    return LiveSample(**values)


def run_info(host: str = "gpu1", method: str = "context-sweep", **changes: Any) -> RunInfo:
    values: dict[str, Any] = {
        "host": host,
        "engine": "builtin",
        "method": method,
        "params": {"contexts": [1024, 4096], "repeats": 3, "text": "code"},
        "flags": {"draft-window": 8, "tree-budget": 64, "chat-template": None},
        "engine_version": "0.4.1",
        "started_at": 1_700_000_000.0,
    }
    values.update(changes)
    return RunInfo(**values)


def start_cli(*args: str) -> subprocess.Popen[str]:
    """`specconsole ARGS` started as a subprocess, output piped, that a test may Ctrl-C.

    Its SIGINT is set back to the default first: a shell that starts the suite in the
    background (`pytest &`) hands its children SIGINT ignored, and then a Ctrl-C test
    reads a run that went on to the end (exit 0) instead of the 130 it checks."""
    return subprocess.Popen(
        [sys.executable, "-m", "console.cli", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`specconsole ARGS` as a subprocess of this interpreter, output captured; `timeout`
    only guards against a hang."""
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=os.environ.copy(),
    )  # fmt: skip
