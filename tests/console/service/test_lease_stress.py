"""Several hands on one service, through a real sshd as a non-root user on the real
bundled engine: each round starts two or three random `specconsole` commands at once (set
with different flags, start, stop, restart, rollback, and a flag change applied through
the TUI's Flags view by the Textual pilot: `tui_apply`), then checks that

- the launch config, the running engine's argv and `status` agree (no drift, ready when
  it runs, stopped when not), and nobody else holds the port;
- exactly one engine of ours runs (none after a stop), found by its marker in /proc;
- every command that exited 0 has its effect in the final state or was undone by a later
  one that exited 0, and one that failed changed nothing: the state after the round is
  what some order of the round's successful commands makes of the state before it (the
  lease serialises them; the order is whoever got the lease first).

`STRESS_ROUNDS` (default 20, as in CI) and `STRESS_SEED` (default: random, printed) let a
failure be replayed.

A TUI apply counts as a `set` of its flag: it exits 0 when it ended ready (or found the
value already current: "no change"), non-zero when it was refused (another writer's
lease, taken with `--wait-lock 0` at once or after waiting; a config changed since its
diff) or failed."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from console.config import HostProfile, LaunchProfile, SSHProfile, save_profile
from console.service.port_owner import marker_value, port_owners
from console.transport.local import LocalTransport
from tests.console.conftest import require_sshd
from tests.console.factories import NO_WARMUP, run_cli
from tests.console.sshd_user import UserSSHD, run_user_sshd
from tests.ports import free_port

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(1800), pytest.mark.slow]

HOST = "stress"
ROOT = Path(__file__).resolve().parents[3]
WINDOW, BUDGET = "speculative-draft-window-size", "speculative-ddtree-budget"
TUNED = (WINDOW, BUDGET)
CHOICES = {WINDOW: (16, 32, 64), BUDGET: (5, 7, 9)}


@dataclass(frozen=True)
class Model:
    running: bool
    flags: tuple[int | None, ...]  # the tuned flags in launch.json
    last_good: tuple[int | None, ...] | None  # ... in last-good.json


@dataclass
class Op:
    argv: tuple[str, ...]
    rc: int | None = None
    out: str = ""

    @property
    def name(self) -> str:
        return " ".join(self.argv)

    @property
    def said(self) -> str:
        """What a TUI apply printed first (applied, no change, why it failed)."""
        if self.argv[0] != "tui-apply" or not self.out.strip():
            return ""
        return f" ({self.out.strip().splitlines()[0][:160]})"

    def apply(self, m: Model) -> Model | None:
        """The state after this command succeeded in `m`; None: it could not have."""
        verb = self.argv[0]
        if verb in ("set", "tui-apply"):  # the TUI's apply is a `set` of its flag
            if "no change" in self.out:
                return m
            key, _, value = self.argv[2].partition("=")
            pairs = zip(TUNED, m.flags, strict=True)
            flags = tuple(int(value) if k == key else v for k, v in pairs)
            return Model(True, flags, m.flags)
        if verb == "start":
            # On a running engine, nothing to start: a success that changes nothing.
            if m.running:
                return m if "nothing to start" in self.out else None
            return replace(m, running=True)
        if verb == "stop":
            return replace(m, running=False)
        if verb == "restart":
            return replace(m, running=True)
        assert verb == "rollback"
        return None if m.last_good is None else replace(m, running=True, flags=m.last_good)


def random_op(rng: random.Random) -> Op:
    verb = rng.choice(["set", "set", "tui", "start", "stop", "restart", "rollback"])
    if verb in ("set", "tui"):
        key = rng.choice(TUNED)
        change = f"{key}={rng.choice(CHOICES[key])}"
        if verb == "tui":  # refused at once while another writer holds the lease, or waits
            return Op(("tui-apply", HOST, change, "--wait-lock", rng.choice(("0", "600"))))
        return Op(("set", HOST, change, "--yes", "--timeout", "120"))
    if verb == "stop":
        return Op(("stop", HOST))
    return Op((verb, HOST, "--timeout", "120"))


async def run_op(op: Op) -> Op:
    # The TUI on the same profile: the same config dir and data dir (the environment).
    module, argv = ("console.cli", op.argv)
    if op.argv[0] == "tui-apply":
        module, argv = ("tests.console.service.tui_apply", op.argv[1:])
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, *argv, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=os.environ.copy(),
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 600)
    op.rc, op.out = proc.returncode, out.decode() + err.decode()
    return op


def outcomes(before: Model, ops: list[Op]) -> set[Model]:
    """What every order of the successful commands makes of `before`."""
    done = [op for op in ops if op.rc == 0]
    found = set()
    for order in itertools.permutations(done):
        state: Model | None = before
        for op in order:
            state = op.apply(state) if state is not None else None
        if state is not None:
            found.add(state)
    return found


def _tuned(path: Path) -> tuple[int | None, ...] | None:
    if not path.exists():
        return None
    flags = json.loads(path.read_text())["flags"]
    return tuple(int(flags[k]) if flags.get(k) is not None else None for k in TUNED)


def engines_of_ours(service_dir: str) -> list[int]:
    """Engine processes (not their `sh` wrappers) carrying this service's marker."""
    marker = marker_value(service_dir).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and b"engine.cli" in argv and not argv[0].endswith(b"sh"):
            found.append(int(entry.name))
    return found


async def observe(state_dir: Path, port: int) -> tuple[Model, list[str]]:
    """The state on the host, and every way in which its parts disagree."""
    problems: list[str] = []
    status_run = run_cli("status", HOST, "--json", timeout=120)
    status = json.loads(status_run.stdout) if status_run.returncode == 0 else {}
    if not status:
        return Model(False, (None, None), None), [f"status failed: {status_run.stderr}"]
    launch = json.loads((state_dir / "launch.json").read_text())
    running = status["state"] == "ready"
    if status["state"] not in ("ready", "stopped"):
        problems.append(f"status says {status['state']}: {status['message']}")
    if status["drift"] or status["port_note"]:
        problems.append(f"status: drift {status['drift']!r}, port {status['port_note']!r}")
    if running and status["running_argv"] != launch["argv"]:
        problems.append(f"the engine runs {status['running_argv']}, the config {launch['argv']}")
    ours = engines_of_ours(str(state_dir))
    if len(ours) != (1 if running else 0):
        problems.append(f"{len(ours)} engines of ours run ({ours}); status says {status['state']}")
    owners = await port_owners(LocalTransport(), port, str(state_dir), status["pid"], timeout=30)
    if owners.foreign or owners.orphans or (running and not owners.ours):
        problems.append(f"port {port}: {owners}")
    return Model(
        running, _tuned(state_dir / "launch.json") or (), _tuned(state_dir / "last-good.json")
    ), problems


@pytest.fixture
def user_sshd() -> Iterator[UserSSHD]:
    require_sshd()
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("the non-root sshd fixture adds a user: CI runs the suite as root")
        pytest.skip("adding the test's non-root user needs root")
    with run_user_sshd() as server:
        yield server


def _profile(server: UserSSHD, tmp_path: Path, state: str) -> HostProfile:
    known = tmp_path / "known_hosts"
    known.write_text(server.server.known_hosts_line())
    ssh = SSHProfile(
        destination="userhost", config=[str(server.ssh_config)], known_hosts=[str(known)],
        identity_file=[str(server.server.client_key)], use_agent=False,
    )  # fmt: skip
    return HostProfile(
        name=HOST, engine="builtin", ssh=ssh, launch=LaunchProfile(python=sys.executable),
        port=free_port(), flags=dict(NO_WARMUP), state_dir=state,
    )  # fmt: skip


async def test_concurrent_changes_never_lose_one_nor_leave_an_engine(
    user_sshd: UserSSHD, tmp_path: Path
) -> None:
    rounds = int(os.environ.get("STRESS_ROUNDS", "20"))
    seed = int(os.environ.get("STRESS_SEED", random.randrange(1 << 30)))
    print(f"STRESS_SEED={seed} STRESS_ROUNDS={rounds}")
    rng = random.Random(seed)
    name = f"stress-{uuid.uuid4().hex[:8]}"
    state_dir = Path(user_sshd.home) / name / HOST
    profile = _profile(user_sshd, tmp_path, f"~/{name}")
    save_profile(profile)
    violations: list[str] = []
    try:
        first = run_cli("start", HOST, timeout=300)
        assert first.returncode == 0, first.stdout + first.stderr
        assert state_dir.stat().st_uid == os.stat(user_sshd.home).st_uid  # the user's files
        model, problems = await observe(state_dir, profile.port)
        assert problems == [], problems
        for n in range(rounds):
            ops = [random_op(rng) for _ in range(rng.choice((2, 3)))]
            await asyncio.gather(*(run_op(op) for op in ops))
            print(f"round {n}: " + "; ".join(f"{op.name} -> {op.rc}{op.said}" for op in ops))
            seen, problems = await observe(state_dir, profile.port)
            expected = outcomes(model, ops)
            if seen not in expected:
                problems.append(f"state {seen} is none of {expected}")
            for problem in problems:
                report = "; ".join(f"{op.name} -> {op.rc}: {op.out.strip()[-300:]}" for op in ops)
                violations.append(f"round {n}: {problem} [{report}]")
            model = seen
        stop = run_cli("stop", HOST, timeout=120)
        assert stop.returncode == 0, stop.stderr
        assert engines_of_ours(str(state_dir)) == [], "an engine of ours is left after stop"
    finally:
        run_cli("stop", HOST, timeout=120)
    assert violations == [], "\n".join(violations)
