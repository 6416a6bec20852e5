"""The doctor's host checks on this machine's real shell and tools: `sudo -n` for a
systemd unit that needs it (a sudo that wants a password, one that does not, none at
all), the host clock against ours, free disk space under the state dir, and GPU
telemetry on a host without nvidia-smi or with a driver that does not answer.

Where the behaviour needs a host this machine is not (its clock 10 s ahead, a sudo
asking a password), a stand-in for that one tool goes first on the PATH; everything else
runs for real."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from console.config import HostProfile, SupervisorProfile
from console.doctor.check import Check, DoctorReport, warn
from console.doctor.host import clock_check, disk_check, gpu_check
from console.doctor.link import link_checks
from console.transport import LocalTransport
from tests.console.service.test_gpu_telemetry import NO_DRIVER, write_fake

pytestmark = pytest.mark.timeout(60)


def _tool(bindir: Path, name: str, body: str) -> None:
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _first_on_path(monkeypatch: pytest.MonkeyPatch, bindir: Path) -> None:
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


async def _sudo(profile: HostProfile) -> Check:
    checks, reached = await link_checks(LocalTransport("gpu1"), profile, (), 10)
    assert reached
    return next(c for c in checks if c.check == "sudo")


SYSTEMD_SUDO = HostProfile(name="gpu1", supervisor=SupervisorProfile(kind="systemd", sudo=True))


async def test_sudo_is_checked_only_where_the_unit_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await _sudo(HostProfile(name="gpu1"))).status == "skip"
    bindir = tmp_path / "bin"
    # sudo as it answers `-n` for a user without a NOPASSWD rule
    _tool(bindir, "sudo", 'echo "sudo: a password is required" >&2; exit 1')
    _first_on_path(monkeypatch, bindir)
    asks = await _sudo(SYSTEMD_SUDO)
    assert asks.status == "fail" and "sudo: a password is required" in asks.detail
    assert "NOPASSWD" in asks.fix and 'scope = "user"' in asks.fix
    # ... and for one with it: `sudo -n true` runs `true`
    _tool(bindir, "sudo", '[ "$1" = -n ] || exit 2; shift; exec "$@"')
    assert (await _sudo(SYSTEMD_SUDO)).status == "ok"


async def test_a_host_without_sudo_is_told_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    gone = await _sudo(SYSTEMD_SUDO)
    assert gone.status == "fail" and gone.detail == "sudo is not installed on gpu1"
    assert gone.fix.startswith("install sudo there")


async def test_the_clock_matches_here_and_a_host_10_s_ahead_is_warned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same = await clock_check(LocalTransport("gpu1"), 10)
    assert same.status == "ok" and "from this machine's" in same.detail
    bindir = tmp_path / "bin"
    ahead = "import time; print(f'{time.time() + 10:.9f}')"
    _tool(bindir, "date", f'exec python3 -c "{ahead}"')
    _first_on_path(monkeypatch, bindir)
    off = await clock_check(LocalTransport("gpu1"), 10)
    assert off.status == "warn" and "is +10.0 s off this machine's" in off.detail
    assert "chrony" in off.fix


async def test_free_disk_space_is_read_on_the_state_dirs_file_system(tmp_path: Path) -> None:
    future = str(tmp_path / "not" / "yet" / "made")  # before the first start
    here = await disk_check(LocalTransport("gpu1"), future, 10, warn_below=1, fail_below=0)
    assert here.status == "ok" and f"(holds {future})" in here.detail
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    low = await disk_check(LocalTransport("gpu1"), future, 10, warn_below=free * 4,
                           fail_below=0)  # fmt: skip
    assert low.status == "warn" and "state_dir" in low.fix
    full = await disk_check(LocalTransport("gpu1"), future, 10, warn_below=free * 4,
                            fail_below=free * 2)  # fmt: skip
    assert full.status == "fail"


async def test_gpu_telemetry_skips_a_cpu_host_and_warns_of_a_driver_that_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}/usr/bin:/bin")
    if any(Path(d, "nvidia-smi").exists() for d in ("/usr/bin", "/bin")):
        pytest.skip("this machine has nvidia-smi")
    cpu = await gpu_check(LocalTransport("gpu1"))
    assert cpu.status == "skip" and "nvidia-smi is not installed on gpu1" in cpu.detail
    write_fake(bindir, None, fail=NO_DRIVER)
    broken = await gpu_check(LocalTransport("gpu1"))
    assert broken.status == "warn" and "NVIDIA driver" in broken.detail + broken.fix
    write_fake(bindir, "0, 12, 1024, 24564, 71.20, 1410, 9501\n")
    assert (await gpu_check(LocalTransport("gpu1"))).detail == "nvidia-smi reports 1 GPU(s)"


def test_a_problem_without_its_fix_is_refused_and_a_report_counts_each_status() -> None:
    with pytest.raises(ValueError, match="without a fix"):
        warn("sftp", "no SFTP", "")
    report = DoctorReport("gpu1", (Check("a", "ok", "fine"), warn("b", "off", "turn it on"),
                                   Check("c", "skip", "n/a")))  # fmt: skip
    assert not report.failed
    assert report.lines()[1].endswith("off; fix: turn it on")
    assert report.summary() == "gpu1: 1 ok, 1 warn, 1 skip"
