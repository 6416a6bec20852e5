"""`doctor` over real sshds on loopback: the link checks out; login shells whose rc files
print banners are warned of (with the fix); an sshd without SFTP is told (files then go
over the command channel); an unknown host key is refused and reported with its
fingerprint, never accepted silently, and trusted only with --accept-new-host-key; a
changed one is refused; a host nobody answers on leaves every later check skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from console.config import HostProfile, SSHProfile, save_profile
from console.doctor import run_doctor
from console.doctor.link import link_checks
from console.service import EngineService
from tests.console.conftest import require_sshd, ssh_profile_for
from tests.console.factories import builtin_profile, run_cli
from tests.console.sshd import SSHServer, run_sshd
from tests.console.sshd_shells import BANNER_OUT, ShellsSSHD, run_shells_sshd
from tests.ports import free_port

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def no_sftp_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    require_sshd()
    with run_sshd(tmp_path_factory.mktemp("nosftp"), sftp=False) as server:
        yield server


@pytest.fixture(scope="module")
def shells() -> Iterator[ShellsSSHD]:
    with run_shells_sshd() as found:
        yield found


def _checks(checks: list) -> dict[str, object]:
    return {c.check: c for c in checks}


async def _link(profile: HostProfile) -> dict:
    async with EngineService.open(profile) as service:
        checks, reached = await link_checks(service.transport, profile, (), 20)
    assert reached, checks
    return _checks(checks)


async def test_the_whole_report_over_ssh(sshd_server: SSHServer, tmp_path: Path) -> None:
    profile = builtin_profile(
        "remote", tmp_path / "state", ssh=ssh_profile_for(sshd_server, tmp_path)
    )
    async with EngineService.open(profile) as service:
        report = await run_doctor(service)
    checks = {c.check: c for c in report.checks}
    assert checks["ssh"].status == "ok" and checks["ssh"].detail == "logged in to testhost"
    assert checks["host-key"].detail == "known (recorded in known_hosts)"
    assert checks["sftp"].status == "ok"
    assert (
        checks["service"].status == "warn" and "specconsole start remote" in checks["service"].fix
    )
    assert checks["port"].status == "ok" and checks["lease"].status == "ok"
    assert checks["clock"].status == "ok" and checks["disk"].status == "ok"


async def test_banners_of_the_login_shell_are_warned_of(shells: ShellsSSHD, tmp_path: Path) -> None:
    user = shells.user("bash")
    known = tmp_path / "known_hosts"
    known.write_text(shells.server.known_hosts_line())
    ssh = SSHProfile(
        destination=user.alias, config=[str(shells.ssh_config)], known_hosts=[str(known)],
        identity_file=[str(shells.server.client_key)], use_agent=False,
    )  # fmt: skip
    shell = (await _link(HostProfile(name="banners", ssh=ssh)))["login-shell"]
    assert shell.status == "warn"
    assert "stdout and stderr" in shell.detail and BANNER_OUT[:40] in shell.detail
    assert "interactive-shell guard" in shell.fix


async def test_an_sshd_without_sftp_is_told_and_files_still_work(
    no_sftp_sshd: SSHServer, tmp_path: Path
) -> None:
    profile = HostProfile(name="nosftp", ssh=ssh_profile_for(no_sftp_sshd, tmp_path))
    sftp = (await _link(profile))["sftp"]
    assert sftp.status == "warn" and "offers no SFTP subsystem" in sftp.detail
    assert "Subsystem sftp internal-sftp" in sftp.fix


def _unknown_key_profile(server: SSHServer, tmp_path: Path, known: Path) -> HostProfile:
    ssh = ssh_profile_for(server, tmp_path).model_copy(update={"known_hosts": [str(known)]})
    return builtin_profile("newhost", tmp_path / "state", ssh=ssh)


def test_an_unknown_host_key_is_reported_not_accepted(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    save_profile(_unknown_key_profile(sshd_server, tmp_path, known))
    refused = run_cli("doctor", "newhost", "--json")  # no terminal to ask on
    assert refused.returncode == 1, refused.stderr
    rows = {r["check"]: r for r in json.loads(refused.stdout)}
    fingerprint = asyncssh.import_public_key(sshd_server.host_key_pub).get_fingerprint()
    assert rows["host-key"]["status"] == "fail" and fingerprint in rows["host-key"]["detail"]
    assert "--accept-new-host-key" in rows["host-key"]["fix"]
    assert known.read_text() == ""  # nothing was trusted
    assert {r["status"] for name, r in rows.items() if name not in ("ssh", "host-key")} == {"skip"}

    trusted = run_cli("doctor", "newhost", "--json", "--accept-new-host-key")
    rows = {r["check"]: r for r in json.loads(trusted.stdout)}
    assert rows["host-key"]["status"] == "ok"
    assert rows["host-key"]["detail"].startswith("newly trusted and recorded: ")
    assert fingerprint in rows["host-key"]["detail"]
    assert sshd_server.host_key_pub in known.read_text()
    failed = any(r["status"] == "fail" for r in rows.values())
    assert trusted.returncode == (1 if failed else 0)


def test_a_changed_host_key_is_refused(sshd_server: SSHServer, tmp_path: Path) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode()
    known = tmp_path / "known_hosts_changed"
    known.write_text(f"[127.0.0.1]:{sshd_server.port} {other.strip()}\n")
    save_profile(_unknown_key_profile(sshd_server, tmp_path, known))
    done = run_cli("doctor", "newhost", "--accept-new-host-key")
    assert done.returncode == 1
    line = next(x for x in done.stdout.splitlines() if x.split()[1] == "host-key")
    assert line.startswith("fail  host-key") and "changed: " in line and "ssh-keygen -R" in line


async def test_a_host_nobody_answers_on_skips_everything_after_ssh(tmp_path: Path) -> None:
    ssh = SSHProfile(destination=f"root@127.0.0.1:{free_port()}", config=[],
                     known_hosts=[str(tmp_path / "kh")], use_agent=False,
                     connect_timeout=2)  # fmt: skip
    profile = builtin_profile("gone", tmp_path / "state", ssh=ssh)
    async with EngineService.open(profile) as service:
        report = await run_doctor(service)
    assert report.by_name("ssh").status == "fail" and report.failed
    assert "specconsole hosts show gone" in report.by_name("ssh").fix
    assert {c.status for c in report.checks[1:]} == {"skip"}
