"""Real shells on a real sshd: login shells whose rc files print banners, an sshd without
SFTP, and a CLI whose stderr holds nothing but the command's own output."""

from __future__ import annotations

import base64
import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from console.config import SSHProfile, save_profile
from console.errors import TransportError
from console.transport import SSHOptions, SSHTransport
from console.transport.remote_shell import after_mark, login_shell_line, new_mark
from tests.console.conftest import engine_service, require_sshd
from tests.console.factories import builtin_profile, run_cli
from tests.console.sshd import SSHServer, run_sshd
from tests.console.sshd_shells import (
    BANNER_ERR,
    BANNER_OUT,
    SHELLS,
    TEST_DIR,
    ShellsSSHD,
    run_shells_sshd,
)

pytestmark = pytest.mark.timeout(180)

SHELL_NAMES = list(SHELLS)
BANNER = re.compile(r"banner|Welcome", re.IGNORECASE)


@pytest.fixture(scope="module")
def shells() -> Iterator[ShellsSSHD]:
    with run_shells_sshd() as found:
        yield found


@pytest.fixture(scope="module")
def no_sftp_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    require_sshd()
    with run_sshd(tmp_path_factory.mktemp("nosftp"), sftp=False) as server:
        yield server


def _known(server: SSHServer, tmp_path: Path) -> str:
    known = tmp_path / "known_hosts"
    known.write_text(server.known_hosts_line())
    return str(known)


def _options(shells: ShellsSSHD, shell: str, tmp_path: Path) -> SSHOptions:
    return SSHOptions(
        destination=shells.user(shell).alias, config_paths=[str(shells.ssh_config)],
        known_hosts=[_known(shells.server, tmp_path)],
        client_keys=[str(shells.server.client_key)], use_agent=False, connect_timeout=10,
    )  # fmt: skip


def _profile_ssh(server: SSHServer, config: Path, alias: str, tmp_path: Path) -> SSHProfile:
    return SSHProfile(
        destination=alias, config=[str(config)], known_hosts=[_known(server, tmp_path)],
        identity_file=[str(server.client_key)], use_agent=False,
    )  # fmt: skip


# -- the pieces ---------------------------------------------------------------------------


def test_the_login_shell_line_is_one_plain_single_quoted_word() -> None:
    # Every login shell (fish's single quotes treat backslashes differently) must read the
    # same bytes: nothing but base64 and the fixed decoder inside the quotes.
    script = "printf '%s\\n' \"$HOME\" 'it'\\''s' \\\\ `x` $(y) ; exit 3\n"
    line = login_shell_line(script)
    inner = line.removeprefix("sh -c '").removesuffix("'")
    assert "'" not in inner and "\\" not in inner
    encoded = re.fullmatch(r'eval "\$\(echo ([A-Za-z0-9+/=]+) \| base64 -d\)"', inner)
    assert encoded is not None and base64.b64decode(encoded.group(1)).decode() == script


def test_output_is_what_follows_its_own_marker() -> None:
    mark, other = new_mark(), new_mark()
    assert mark != other
    assert after_mark(b"banner\npartial" + mark + b"\nout\n" + mark + b"\n", mark) == (
        b"out\n" + mark + b"\n"
    )
    assert after_mark(b"banner\n" + other + b"\nout\n", mark) is None


# -- banners on stdout and stderr, per login shell -----------------------------------------


@pytest.mark.parametrize("shell", SHELL_NAMES)
async def test_banners_never_reach_a_command(
    shells: ShellsSSHD, shell: str, tmp_path: Path
) -> None:
    user = shells.user(shell)
    t = SSHTransport(_options(shells, shell, tmp_path), name=f"{shell}-box")
    try:
        # The banner really is printed: a raw exec sees it (else this test proves nothing).
        conn = await t.connection()
        raw = await conn.run("echo raw", check=False)
        assert BANNER_OUT in str(raw.stdout) and BANNER_ERR in str(raw.stderr)

        result = await t.run("echo out; echo err >&2; exit 4")
        assert (result.exit_code, result.stdout, result.stderr) == (4, "out\n", "err\n")
        result = await t.run(["printf", "%s|", "a b", "$HOME", "it's", "back\\slash\\"])
        assert result.stdout == "a b|$HOME|it's|back\\slash\\|" and result.stderr == ""
        assert (await t.run(["cat"], input="fed\n")).stdout == "fed\n"
        assert (await t.run('printf %s "$0"')).stdout == "sh"
        assert await t.home() == user.home
        lines = [line async for line in t.stream("echo one; echo two >&2; echo three")]
        assert lines == ["one", "two", "three"]

        data = bytes(range(256)) * 3 + b"\n"
        await t.write_file(f"~/{TEST_DIR}/blob.bin", data, mode=0o600)
        assert await t.read_file(f"~/{TEST_DIR}/blob.bin") == data
        assert stat.S_IMODE(Path(user.home, TEST_DIR, "blob.bin").stat().st_mode) == 0o600
        with pytest.raises(FileNotFoundError):
            await t.read_file(f"~/{TEST_DIR}/missing")
    finally:
        await t.close()


@pytest.mark.parametrize("shell", SHELL_NAMES)
def test_cli_status_through_a_bannered_shell(
    shells: ShellsSSHD, shell: str, tmp_path: Path
) -> None:
    user = shells.user(shell)
    ssh = _profile_ssh(shells.server, shells.ssh_config, user.alias, tmp_path)
    state = f"{user.home}/{TEST_DIR}/state-{tmp_path.name}"
    save_profile(builtin_profile(f"{shell}-gpu", state, ssh=ssh))
    done = run_cli("status", f"{shell}-gpu", "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "stopped"
    # Nothing but the command's own output: no banner, no third-party warning.
    assert done.stderr == "", done.stderr
    assert not BANNER.search(done.stdout)


# -- an sshd without SFTP -------------------------------------------------------------------


async def test_files_over_exec_without_sftp(
    no_sftp_sshd: SSHServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asks: list[object] = []
    real = asyncssh.SSHClientConnection.start_sftp_client

    def counting(self: asyncssh.SSHClientConnection, *args: object, **kw: object) -> object:
        asks.append(self)
        return real(self, *args, **kw)

    monkeypatch.setattr(asyncssh.SSHClientConnection, "start_sftp_client", counting)
    options = SSHOptions(
        destination="testhost", config_paths=[str(no_sftp_sshd.ssh_config)],
        known_hosts=[_known(no_sftp_sshd, tmp_path)],
        client_keys=[str(no_sftp_sshd.client_key)], use_agent=False, connect_timeout=10,
    )  # fmt: skip
    t = SSHTransport(options, name="nosftp-box")
    target = tmp_path / "dir with space" / "it's.json"
    try:
        await t.write_file(str(target), b"first", mode=0o640)
        assert target.read_bytes() == b"first"
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        data = bytes(range(256)) + b"no newline at the end"
        await t.write_file(str(target), data)
        assert await t.read_file(str(target)) == data
        assert stat.S_IMODE(target.stat().st_mode) == 0o644
        with pytest.raises(FileNotFoundError):
            await t.read_file(str(tmp_path / "missing"))
        # A write that cannot land leaves the old file and no temp file behind.
        with pytest.raises(TransportError, match=r"^Cannot write .* on nosftp-box: .+\.$"):
            await t.write_file(str(target / "below-a-file"), b"x")
        assert target.read_bytes() == data
        assert sorted(p.name for p in target.parent.iterdir()) == ["it's.json"]
        # Asked once on this connection, then remembered.
        assert len(asks) == 1
    finally:
        await t.close()


async def test_launch_config_writes_without_sftp(no_sftp_sshd: SSHServer, tmp_path: Path) -> None:
    # What `set` and `rollback` write before they restart: the current and last-good configs.
    ssh = _profile_ssh(no_sftp_sshd, no_sftp_sshd.ssh_config, "testhost", tmp_path)
    profile = builtin_profile("nosftp-gpu", tmp_path / "state", ssh=ssh)
    async with engine_service(profile, stop=False) as service:
        store = await service.store()
        assert await store.current() is None
        old = service.config_for({"port": 7001})
        new = service.config_for({"port": 7002})
        await store.write_last_good(old)
        await store.write_current(new)
        assert (await store.current()).id == new.id  # type: ignore[union-attr]
        assert (await store.last_good()).id == old.id  # type: ignore[union-attr]
        assert (await service.status()).state == "stopped"
