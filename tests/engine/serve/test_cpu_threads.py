"""The engine's CPU threading defaults: one thread fewer than the cores, passive waiting,
and whatever the environment (a profile's launch env) sets wins; the served process has
them before torch loads."""

from __future__ import annotations

import os
import subprocess
import sys

from engine.serve.cpu_threads import apply_cpu_defaults, cpu_defaults, pin_to_last_cores


def test_defaults_leave_a_core_and_wait_passively() -> None:
    assert cpu_defaults(2) == {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    assert cpu_defaults(16)["OMP_NUM_THREADS"] == "15"
    assert (
        cpu_defaults(1)["OMP_NUM_THREADS"] == "1" and cpu_defaults(None)["OMP_NUM_THREADS"] == "1"
    )


def test_the_environment_wins() -> None:
    env = {"OMP_NUM_THREADS": "2"}
    added = apply_cpu_defaults(env, cores=8)
    assert env == {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}
    assert added == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_torch_in_the_serve_entry_point_gets_them() -> None:
    # `specengine serve` sets them before torch loads; torch then runs one thread fewer
    # than the cores this process may use
    code = (
        "import contextlib, io, os, engine.cli as c\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    c.main(['serve', '--help'])\n"
        "import torch; print(os.environ['OMP_WAIT_POLICY'], torch.get_num_threads(),\n"
        "                   ','.join(map(str, sorted(os.sched_getaffinity(0)))))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "SPECENGINE_"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True)  # fmt: skip
    policy, threads, pinned = out.stdout.split()
    cores = sorted(os.sched_getaffinity(0))
    want = max(1, len(cores) - 1)
    assert policy == "PASSIVE" and int(threads) == want
    # the last cores, the first left to the console (all of them on a one-core host)
    assert pinned == ",".join(map(str, cores[-want:] if len(cores) > 1 else cores))


def test_pinning_leaves_the_first_cores_and_can_be_turned_off(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cores: calls.append(set(cores)))
    assert pin_to_last_cores(3, {0, 1, 2, 3}) == {1, 2, 3} and calls == [{1, 2, 3}]
    assert pin_to_last_cores(2, {4, 5}) is None  # no core to leave: not pinned
    monkeypatch.setenv("SPECENGINE_CPU_PIN", "0")
    assert pin_to_last_cores(1, {0, 1}) is None and len(calls) == 1
