"""GPU telemetry over the console's transports, against a fake `nvidia-smi` that prints the
real query-mode CSV: on the PATH of a real sshd on loopback, and on the local PATH.

No GPU is needed (or used): the fake checks it was called with exactly the query argv
and prints what the test put beside it, so a multi-GPU host, an "[N/A]" field, a driver
that does not answer and a host with no nvidia-smi at all are each one file away.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.analysis.gpu_sample import GpuSample, parse_query_csv
from console.cli import main
from console.measure.gpu import QUERY_ARGV, GpuRecorder, GpuTelemetry
from console.store import RunStore
from console.store.schema import SCHEMA_VERSION
from console.transport import LocalTransport, SSHOptions, SSHTransport
from tests.console.conftest import require_sshd
from tests.console.factories import run_info
from tests.console.sshd import SSHServer, run_sshd

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[3]

# Two H100s under load and idle (nvidia-smi 550-series output, nounits), one reporting no
# power reading, as boards behind some baseboards and MIG setups do.
TWO_GPUS = "0, 87, 61234, 81559, 312.47, 1980, 2619\n1, 0, 3, 81559, [N/A], 345, 2619\n"
ONE_GPU = "0, 12, 1024, 24564, 71.20, 1410, 9501\n"
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)
QUERY = " ".join(QUERY_ARGV[1:])


def write_fake(bindir: Path, csv: str | None, *, fail: str | None = None) -> None:
    """Put a fake `nvidia-smi` in `bindir` (or none, with csv=None and fail=None)."""
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "nvidia-smi"
    if csv is None and fail is None:
        script.unlink(missing_ok=True)
        return
    (bindir / "gpus.csv").write_text(csv or "")
    (bindir / "fail.txt").write_text(fail or "")
    # It refuses any other arguments, so a test passes only if the argv arrived verbatim.
    script.write_text(
        f"""#!/bin/sh
here=$(dirname "$0")
if [ "$*" != {json.dumps(QUERY)} ]; then echo "unexpected args: $*" >&2; exit 2; fi
if [ -s "$here/fail.txt" ]; then cat "$here/fail.txt"; exit 9; fi
cat "$here/gpus.csv"
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# -- the parser ---------------------------------------------------------------------------


def test_parser_reads_every_gpu_and_na_as_none() -> None:
    first, second = parse_query_csv(TWO_GPUS, t=5.0)
    assert first == GpuSample(0, 87.0, 61234.0, 81559.0, 312.47, 1980.0, 2619.0, t=5.0)
    assert second.index == 1 and second.power_w is None and second.utilization_pct == 0.0
    assert first.memory_pct == pytest.approx(100 * 61234 / 81559)
    assert parse_query_csv("No devices were found\n\n") == []
    assert parse_query_csv("0, [Not Supported], 1, 2, 3, 4, 5")[0].utilization_pct is None


# -- over SSH -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SSHServer, Path]]:
    """An sshd whose sessions see a PATH with a directory for the fake nvidia-smi first."""
    require_sshd()
    bindir = tmp_path_factory.mktemp("gpubin")
    with run_sshd(
        tmp_path_factory.mktemp("gpu_sshd"), extra_config=f"SetEnv PATH={bindir}:/usr/bin:/bin\n"
    ) as server:
        yield server, bindir


@pytest.fixture
def gpu_host(gpu_sshd: tuple[SSHServer, Path], tmp_path: Path) -> tuple[SSHOptions, Path]:
    server, bindir = gpu_sshd
    known = tmp_path / "known_hosts"
    known.write_text(server.known_hosts_line())
    options = SSHOptions(
        destination="testhost", config_paths=[str(server.ssh_config)], known_hosts=[str(known)],
        client_keys=[str(server.client_key)], use_agent=False, connect_timeout=10,
    )  # fmt: skip
    return options, bindir


async def test_multi_gpu_host_over_ssh(gpu_host: tuple[SSHOptions, Path]) -> None:
    options, bindir = gpu_host
    write_fake(bindir, TWO_GPUS)
    t = SSHTransport(options, name="gpu-box")
    try:
        telemetry = GpuTelemetry(t)
        assert await telemetry.available() and telemetry.reason is None
        samples = await telemetry.sample()
    finally:
        await t.close()
    assert [s.index for s in samples] == [0, 1]
    assert samples[0].sm_clock_mhz == 1980.0 and samples[1].power_w is None


@pytest.mark.parametrize(
    ("csv", "fail", "reason"),
    [
        (None, None, "nvidia-smi is not installed on gpu-box"),
        (None, NO_DRIVER, "couldn't communicate with the NVIDIA driver"),
        ("No devices were found\n", None, "lists no GPU"),
    ],
)
async def test_no_gpu_over_ssh_is_absent_not_an_error(
    gpu_host: tuple[SSHOptions, Path], csv: str | None, fail: str | None, reason: str
) -> None:
    options, bindir = gpu_host
    if (
        csv is None
        and fail is None
        and any(Path(d, "nvidia-smi").exists() for d in ("/usr/bin", "/bin"))
    ):
        pytest.skip("this machine has a real nvidia-smi on the sshd's PATH")
    write_fake(bindir, csv, fail=fail)
    t = SSHTransport(options, name="gpu-box")
    try:
        telemetry = GpuTelemetry(t)
        assert not await telemetry.available()
        assert reason in (telemetry.reason or "")
        assert await telemetry.sample() == []
    finally:
        await t.close()


# -- locally ------------------------------------------------------------------------------


@pytest.fixture
def local_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local PATH is a directory of the test's own (plus sh and coreutils)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sh", "cat", "dirname"):
        found = shutil.which(tool)
        assert found is not None
        os.symlink(found, bindir / tool)
    monkeypatch.setenv("PATH", str(bindir))
    return bindir


async def test_local_host_without_nvidia_smi(local_bin: Path) -> None:
    telemetry = GpuTelemetry(LocalTransport("local"))
    assert not await telemetry.available()
    assert telemetry.reason == "nvidia-smi is not installed on local"
    assert await telemetry.sample() == []


async def test_local_host_with_a_gpu(local_bin: Path) -> None:
    write_fake(local_bin, ONE_GPU)
    [sample] = await GpuTelemetry(LocalTransport("local")).sample()
    assert sample.memory_total_mib == 24564.0 and sample.power_w == pytest.approx(71.2)


def test_cli_gpu_json_and_table(local_bin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpu", "local", "--json"]) == 0
    absent = json.loads(capsys.readouterr().out)
    assert absent == {
        "host": "local", "available": False, "gpus": [],
        "reason": "nvidia-smi is not installed on local",
    }  # fmt: skip
    write_fake(local_bin, TWO_GPUS)
    assert main(["gpu", "local", "--watch", "0.01", "--count", "2", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and [g["index"] for g in json.loads(lines[1])["gpus"]] == [0, 1]
    assert main(["gpu", "local"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["GPU", "UTIL", "%", "MEM", "MIB", "POWER", "W", "SM", "MHZ",
                                "MEM", "MHZ"]  # fmt: skip
    assert table[1].split() == ["0", "87", "61234/81559", "312.5", "1980", "2619"]
    assert table[2].split()[3] == "-"  # [N/A] power


# -- stored with a run --------------------------------------------------------------------


async def test_recorder_stores_gpu_samples_with_the_run(
    local_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fake(local_bin, TWO_GPUS)
    data = tmp_path / "data"
    monkeypatch.setenv("SPECCONSOLE_DATA_DIR", str(data))
    store = RunStore.default()
    try:
        run_id = await store.start_run(run_info())
        recorder = GpuRecorder(
            GpuTelemetry(LocalTransport("local")), store=store, run_id=run_id, interval=0.01
        ).start()
        for _ in range(500):
            if len(recorder.samples) >= 4:
                break
            await asyncio.sleep(0.01)
        await recorder.stop()
        await store.finish_run(run_id, "complete", None)
        run = await store.run(run_id)
    finally:
        store.close()
    assert len(run.gpu) == len(recorder.samples) >= 4
    assert {s.index for s in run.gpu} == {0, 1} and run.as_dict()["gpu"][1]["power_w"] is None
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    # `history show` lists them beside the run's other samples
    env = {**os.environ, "PATH": os.defpath, "SPECCONSOLE_DATA_DIR": str(data)}
    proc = subprocess.run(
        [sys.executable, "-m", "console.cli", "history", "show", str(run_id)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"gpu samples: {len(run.gpu)} (2 GPUs)" in proc.stdout
    assert "SM MHZ" in proc.stdout and "61234/81559" in proc.stdout


async def test_recorder_on_a_host_without_gpus_records_nothing(local_bin: Path) -> None:
    recorder = GpuRecorder(GpuTelemetry(LocalTransport("local")), interval=0.01).start()
    await asyncio.sleep(0.1)
    await recorder.stop()
    assert recorder.samples == []


class _SlowStore:
    """A run store whose writes take a while, so a stop can land in the middle of one."""

    def __init__(self) -> None:
        self.stored: list[GpuSample] = []

    async def add_gpu(self, run_id: int, samples: list[GpuSample]) -> None:
        await asyncio.sleep(0.2)
        self.stored.extend(samples)


async def test_a_stop_during_a_store_write_keeps_memory_and_store_in_step(
    local_bin: Path,
) -> None:
    write_fake(local_bin, TWO_GPUS)
    store = _SlowStore()
    recorder = GpuRecorder(
        GpuTelemetry(LocalTransport("local")),
        store=store,
        run_id=1,
        interval=0.01,  # type: ignore[arg-type]
    ).start()
    for _ in range(500):
        if recorder.samples:  # read, and its write to the store under way
            break
        await asyncio.sleep(0.005)
    await recorder.stop()
    assert recorder.samples and store.stored == recorder.samples
