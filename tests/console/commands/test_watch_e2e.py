"""`specconsole watch` and `logs -f` against the real engine: through `local`, figures in
a sane band of the requests' own server decode rate; through a real sshd that is killed
and started again mid-run, both keep going and lose nothing already taken.

The engine runs on its bundled weights (no model paths in the profile), so speculation
accepts tokens and commit lengths are well above 1.
"""

from __future__ import annotations

import asyncio
import json
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from console.analysis.records import LiveSample
from console.config import HostProfile, SSHProfile, save_profile
from console.measure.live import RECONNECTED, LiveSeries, is_link_sample
from console.measure.live_samples import sample_from_log_line
from console.service import EngineService
from tests.console.conftest import engine_service, ssh_profile_for
from tests.console.factories import builtin_profile, start_cli
from tests.console.sshd_restart import RestartableSSHD

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

FLAGS = {"skip-server-warmup": True, "decode-log-interval": 10}


def _profile(name: str, tmp_path: Path, ssh: SSHProfile | None = None) -> HostProfile:
    return builtin_profile(name, tmp_path / "state", flags=dict(FLAGS), ssh=ssh)


class Proc:
    """A `specconsole` subprocess whose stdout and stderr lines are collected as they come."""

    def __init__(self, *args: str) -> None:
        self.popen = start_cli(*args)
        self.out: list[str] = []
        self.err: list[str] = []
        self._threads = [
            threading.Thread(target=self._read, args=(self.popen.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.popen.stderr, self.err), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def finish(self, sig: int | None = None, timeout: float = 30) -> int:
        if sig is not None and self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            code = self.popen.wait(10)
        for t in self._threads:
            t.join(10)
        return code


async def _until(
    what: str, check: Callable[[], bool], timeout: float = 60.0, detail: Callable[[], str] = str
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {detail()}")
        await asyncio.sleep(0.1)


async def _generate(port: int, n: int, text: str = "def fib(n):\n") -> dict:
    body = {"text": text, "sampling_params": {"max_new_tokens": n, "ignore_eos": True}}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
        response = await http.post("/generate", json=body)
    assert response.status_code == 200, response.text
    return response.json()["meta_info"]


def _key(sample: LiveSample) -> tuple:
    return (sample.context_tokens, sample.tok_s, sample.commit_len)


# -- local ------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def local_service(tmp_path: Path) -> AsyncIterator[EngineService]:
    profile = _profile("live-local", tmp_path)
    save_profile(profile)  # the CLI subprocesses read it (isolated config dir)
    async with engine_service(profile) as svc:
        yield svc


async def test_watch_on_a_stopped_engine_is_one_sentence_and_exit_1(
    local_service: EngineService,
) -> None:
    proc = Proc("watch", local_service.profile.name, "--duration", "5")
    assert proc.finish(timeout=60) == 1
    assert proc.out == []
    assert len(proc.err) == 1 and "is stopped" in proc.err[0] and "specconsole start" in proc.err[0]


async def test_watch_json_samples_agree_with_the_requests_server_decode_rate(
    local_service: EngineService,
) -> None:
    event = await local_service.start(wait=True, timeout=120)
    assert event.state == "ready", event.describe()
    port = local_service.profile.port
    watch = Proc("watch", "live-local", "--json", "--interval", "0.5", "--duration", "15")
    try:
        await asyncio.sleep(3)  # let it start following before the first request
        rates: list[float] = []
        while watch.popen.poll() is None:
            meta = await _generate(port, 1500)
            rates.append(meta["decode_throughput"])
        assert watch.finish() == 0, watch.err
    finally:
        watch.finish(signal.SIGINT)
    samples = [LiveSample.from_dict(json.loads(line)) for line in watch.out]
    assert watch.err == [], "\n".join(watch.err)  # nothing went wrong: nothing on stderr
    by_source = {s: [x for x in samples if x.source == s] for s in ("log", "metrics")}
    assert by_source["log"] and by_source["metrics"], [s.source for s in samples]
    server = statistics.median(rates)
    for source, got in by_source.items():
        for s in got:
            assert s.tok_s is not None and s.commit_len is not None and s.step_time_s
            assert s.commit_len > 1.0
            assert s.tok_s == pytest.approx(s.commit_len / s.step_time_s, rel=0.02)
        # Log lines cover 10 rounds each and scrapes half a second, so single samples
        # swing with the text (a repetitive stretch accepts more); their median sits in a
        # band around the requests' own server-side decode rate.
        median = statistics.median(s.tok_s for s in got if s.tok_s)
        assert server / 3 < median < server * 3, (source, median, server)
        print(f"{source}: {len(got)} samples, median {median:.0f} tok/s; server {server:.0f}")
    assert all(s.context_tokens for s in by_source["log"])


# -- through a real sshd that goes away ---------------------------------------------------


@pytest_asyncio.fixture
async def ssh_service(
    restartable_sshd: RestartableSSHD, tmp_path: Path
) -> AsyncIterator[EngineService]:
    server = restartable_sshd.server
    ssh = ssh_profile_for(server, tmp_path)
    profile = _profile("live-ssh", tmp_path, ssh)
    save_profile(profile)
    # A failed test may leave the sshd stopped; stopping the engine needs it.
    async with engine_service(profile, before_stop=restartable_sshd.start) as svc:
        yield svc


async def test_watch_and_logs_follow_survive_sshd_restart(
    ssh_service: EngineService, restartable_sshd: RestartableSSHD
) -> None:
    svc = ssh_service
    event = await svc.start(wait=True, timeout=120)
    assert event.state == "ready", event.describe()
    port = svc.profile.port
    engine_log = Path((await svc.files()).log)

    def decode_lines() -> list[str]:
        return [ln for ln in engine_log.read_text().splitlines() if "Decode batch" in ln]

    stored: list[LiveSample] = []

    async def sink(sample: LiveSample) -> None:
        stored.append(sample)

    series = LiveSeries(svc, scrape_interval=0.5, sink=sink)
    runner = asyncio.create_task(series.run())
    watch = Proc("watch", "live-ssh", "--json", "--interval", "0.5")
    follow = Proc("logs", "live-ssh", "-f", "--grep", "Decode batch")
    try:
        await asyncio.sleep(4)  # the CLI followers connect and start tailing
        await _generate(port, 600)
        # On a loaded machine the watch subprocess can attach after that request ended;
        # then nothing more is logged for it to follow: decode until it has a sample.
        for _ in range(6):
            if any(json.loads(x)["source"] == "log" for x in list(watch.out)):
                break
            await asyncio.sleep(2)
            await _generate(port, 200)
        before = decode_lines()
        assert before

        def missing(lines: list[str]) -> dict[str, int]:
            keys = [_key(sample_from_log_line(ln)) for ln in lines]  # type: ignore[arg-type]
            taken = [LiveSample.from_dict(json.loads(x)) for x in list(watch.out)]
            watch_keys = [_key(s) for s in taken if s.source == "log"]
            series_keys = {_key(s) for s in series.snapshot() if s.source == "log"}
            # The watch subprocess may start following after the first lines on a loaded
            # machine: it owes every line from the first one it printed on.
            first = watch_keys[0] if watch_keys else None
            owed = keys[keys.index(first) :] if first in keys else keys
            return {
                "watch": len(set(owed) - set(watch_keys)),
                "series": len(set(keys) - series_keys),
                "logs -f": len(set(lines) - set(follow.out)),
            }

        def has_all(lines: list[str]) -> Callable[[], bool]:
            return lambda: not any(missing(lines).values())

        def report(lines: list[str]) -> Callable[[], str]:
            return lambda: (
                f"missing {missing(lines)} of {len(lines)}; watch stderr {watch.err}; "
                f"watch log samples {[json.loads(x)['context_tokens'] for x in watch.out]}; "
                f"decode lines {[_key(sample_from_log_line(ln))[0] for ln in lines]}; "  # type: ignore[arg-type]
                f"logs -f markers {[x for x in follow.err if x.startswith('-- ')]}"
            )

        await _until(
            "the first request in every follower", has_all(before[-3:]), detail=report(before)
        )
        taken_before = list(watch.out)

        # sshd dies (listener and every connection); the engine keeps running and decodes
        # a request while the link is down.
        restartable_sshd.stop()
        during = await _generate(port, 600, text="The quick brown fox")
        assert during["completion_tokens"] == 600
        await _until("the followers noticing", lambda: series.link_down, timeout=30)
        await asyncio.sleep(2)
        restartable_sshd.start()
        await _until(
            "reconnect lines",
            lambda: (
                any("reconnected after" in x for x in watch.err)
                and any("reconnected after" in x for x in follow.err)
                and not series.link_down
            ),
            timeout=60,
        )
        await _generate(port, 600, text="import os\n")
        everything = decode_lines()
        await _until(
            "every decode line in every follower",
            has_all(everything),
            timeout=60,
            detail=report(everything),
        )
    finally:
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
        watch_code = watch.finish(signal.SIGINT)
        follow.finish(signal.SIGTERM)

    assert watch_code == 130  # Ctrl-C
    # Nothing printed before the drop was lost or taken back.
    assert watch.out[: len(taken_before)] == taken_before
    # Every decode line of the run is one log sample, once, in order, with the lines the
    # engine wrote while sshd was down among them (read from the backlog on reconnect).
    all_keys = [_key(sample_from_log_line(ln)) for ln in everything]  # type: ignore[arg-type]
    watch_log = [
        _key(s)
        for s in (LiveSample.from_dict(json.loads(x)) for x in watch.out)
        if s.source == "log"
    ]
    assert watch_log == all_keys[len(all_keys) - len(watch_log) :]
    assert len(set(watch_log)) == len(watch_log)
    series_log = [_key(s) for s in series.snapshot() if s.source == "log" and not is_link_sample(s)]
    assert series_log == all_keys[len(all_keys) - len(series_log) :]
    assert watch.out and all(json.loads(x)["note"] == "" for x in watch.out)
    # The link lines went to stderr, not into the JSON.
    assert any("lost" in x and "reconnecting" in x for x in watch.err), watch.err
    # logs -f printed every decode line exactly once, and said what happened in between.
    followed = [x for x in follow.out if not x.startswith("-- ")]
    assert followed == everything
    markers = [x for x in follow.err if x.startswith("-- ")]  # on stderr, out of the log
    assert any("lost; reconnecting (attempt 1" in x for x in markers), markers
    assert markers[-1].startswith("-- reconnected after"), markers
    # The stored series has the outage as one down and one up sample, in that order.
    links = [s.note for s in stored if is_link_sample(s)]
    assert len(links) == 2 and links[0].startswith("link down") and links[1].startswith(RECONNECTED)
    assert [s for s in stored if not is_link_sample(s)] == [
        s for s in series.snapshot() if not is_link_sample(s)
    ]
