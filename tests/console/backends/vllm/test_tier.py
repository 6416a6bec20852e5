"""The real-vLLM tier retries a start that died in vLLM's own warm-up once, and says so;
a start that failed before its weights loaded (our flags, the install) is not retried."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.console.backends.vllm.tier import LOADED, Tier


class Scripted(Tier):
    def __init__(self, home: Path, codes: list[int], log: str) -> None:
        super().__init__(venv=home, home=home)
        self.codes, self.text, self.calls = codes, log, []

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        self.calls.append(args)
        code = self.codes.pop(0) if args[0] in ("start", "rollback") else 0
        err = "  root cause (first error in its log): Fatal Python error: stack overflow"
        return subprocess.CompletedProcess(args, code, "", err if code else "")

    def log(self) -> str:
        return self.text


def test_a_warm_up_crash_is_retried_once_and_reported(tmp_path: Path) -> None:
    tier = Scripted(tmp_path, [1, 0], f"INFO {LOADED} 0.04 seconds\nFatal Python error")
    with pytest.warns(UserWarning, match="died in its warm-up on start; retried once"):
        done = tier.start()
    assert done.returncode == 0 and [c[0] for c in tier.calls] == ["start", "start"]
    assert tier.retried == ["start: root cause (first error in its log): Fatal Python error: "
                            "stack overflow"]  # fmt: skip


def test_a_failure_before_loading_is_not_retried(tmp_path: Path) -> None:
    tier = Scripted(tmp_path, [1, 0], "ERROR bad flag")
    assert tier.start().returncode == 1 and len(tier.calls) == 1 and tier.retried == []


def test_a_rollback_that_crashes_in_warm_up_is_started_again(tmp_path: Path) -> None:
    tier = Scripted(tmp_path, [1, 0], LOADED)
    with pytest.warns(UserWarning):
        assert tier.start("rollback").returncode == 0
    assert [c[0] for c in tier.calls] == ["rollback", "stop", "start"]


def test_the_bench_and_the_tier_look_for_the_venv_in_one_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.bench.peer_vllm import vllm_venv
    from tests.console.fixtures.vllm_venv import venv_path

    monkeypatch.delenv("SPECCONSOLE_VLLM_VENV", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    default = tmp_path / ".cache" / "specconsole" / "vllm-0.32.0"
    assert venv_path() == default and vllm_venv() is None  # not built there yet
    (default / "bin").mkdir(parents=True)
    (default / "bin" / "python").touch()
    assert vllm_venv() == default
    monkeypatch.setenv("SPECCONSOLE_VLLM_VENV", str(tmp_path / "elsewhere"))
    assert venv_path() == tmp_path / "elsewhere" and vllm_venv() is None
