"""`LiveSeries` bookkeeping: ring buffer, snapshot since, subscriptions, sink order and
failures, request samples, and one link sample per outage however many sources see it.
(Following a real engine and surviving a real sshd restart: test_watch_e2e.)"""

from __future__ import annotations

import asyncio

import pytest

from console.analysis.records import LiveSample, RequestSample
from console.measure.live import LINK_DOWN, RECONNECTED, LiveSeries, is_link_sample


def _series(**kw) -> LiveSeries:
    return LiveSeries(None, **kw)  # type: ignore[arg-type]  # no service: run() is not used


def _sample(t: float, tok_s: float = 100.0) -> LiveSample:
    return LiveSample(t=t, source="log", tok_s=tok_s, commit_len=4.0, step_time_s=0.04)


def _request(t: float) -> RequestSample:
    return RequestSample(
        engine="builtin", endpoint="/generate", text_type="code", prompt_id="p",
        context_tokens=100, max_tokens=64, ignore_eos=True, streamed=True, flags_hash="x",
        completion_tokens=64, finish_reason="length", latency_s=1.0, ttft_s=0.1,
        decode_time_s=0.9, decode_source="server", verify_steps=16, decode_tok_s=70.0,
        commit_len=63 / 16, step_time_s=0.9 / 16, decode_context=132.0, t=t,
    )  # fmt: skip


async def test_ring_buffer_and_snapshot_since() -> None:
    series = _series(capacity=3)
    for t in range(5):
        series._emit(_sample(float(t)))
    assert [s.t for s in series.snapshot()] == [2.0, 3.0, 4.0]  # the last `capacity`
    assert [s.t for s in series.snapshot(since=3.0)] == [4.0]  # strictly after
    assert series.snapshot(since=4.0) == []


async def test_subscribers_get_every_sample_in_order_and_pending_drains() -> None:
    series = _series()
    async with series.subscribe() as a, series.subscribe() as b:
        series._emit(_sample(1.0))
        live = series.record_request(_request(2.0))
        assert live.source == "request" and live.tok_s == 70.0 and live.context_tokens == 132
        assert await anext(a) == _sample(1.0)
        assert await anext(a) == live
        assert b.pending() == [_sample(1.0), live]
        waiter = asyncio.create_task(anext(b))
        await asyncio.sleep(0)
        assert not waiter.done()
        series._emit(_sample(3.0))
        assert (await asyncio.wait_for(waiter, 1)).t == 3.0
    series._emit(_sample(4.0))  # after leaving the block: nobody is subscribed
    assert not series.subscribers


async def test_sink_gets_every_sample_in_order_and_a_failing_sink_does_not_stop_it() -> None:
    stored: list[float] = []

    async def sink(sample: LiveSample) -> None:
        await asyncio.sleep(0.001)  # a store write yields to the loop
        if sample.t == 2.0:
            raise OSError("disk full")
        stored.append(sample.t)

    series = _series(sink=sink)
    for t in range(5):
        series._emit(_sample(float(t)))
    series.record_request(_request(5.0))
    await series.flush()
    assert stored == [0.0, 1.0, 3.0, 4.0, 5.0]
    assert series.sink_errors == 1
    assert len(series.snapshot()) == 6  # the buffer keeps what the sink could not


def test_record_request_without_a_running_loop_is_kept_for_the_sink() -> None:
    stored: list[LiveSample] = []

    async def sink(sample: LiveSample) -> None:
        stored.append(sample)

    series = _series(sink=sink)
    series.record_request(_request(1.0))  # a synchronous caller
    assert stored == []
    asyncio.run(series.flush())
    assert [s.source for s in stored] == ["request"]


async def test_one_link_sample_per_outage_however_many_sources_notice() -> None:
    series = _series()
    async with series.subscribe() as sub:
        series._link_lost("metrics", "Cannot reach the engine on gpu1 (port 30000): refused.")
        series._link_lost("log", "the log stream from gpu1 dropped")
        assert series.link_down
        series._link_back("metrics")
        assert series.link_down  # the log stream is still down
        series._link_back("log")
        assert not series.link_down
        series._link_back("log")  # already back: nothing new
        links = sub.pending()
    assert [is_link_sample(s) for s in links] == [True, True]
    down, up = links
    assert down.note == f"{LINK_DOWN}: Cannot reach the engine on gpu1 (port 30000): refused"
    assert down.source == "metrics" and down.tok_s is None and down.commit_len is None
    assert up.note.startswith(RECONNECTED) and up.note.endswith(" s")
    assert series.link_note == up.note
    assert not is_link_sample(_sample(1.0))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown live sources"):
        _series(sources=("log", "journal"))
    with pytest.raises(ValueError, match="scrape_interval"):
        _series(scrape_interval=0)


async def test_a_measure_session_hands_its_samples_to_the_live_series(monkeypatch) -> None:
    """Measured requests reach the live series inside measure/: nobody relays them."""
    from types import SimpleNamespace

    from console.measure import session as session_module
    from console.measure.request_measurement import RequestSpec
    from console.measure.session import EngineFacts, MeasureSession

    async def measure_request(*_args, **_kw) -> RequestSample:
        return _request(7.0)

    async def client() -> object:
        return object()

    monkeypatch.setattr(session_module, "measure_request", measure_request)
    service = SimpleNamespace(client=client, profile=SimpleNamespace(name="h", engine="builtin"))
    series = _series()
    seen: list[RequestSample] = []
    session = MeasureSession(service, live=series, on_sample=seen.append)  # type: ignore[arg-type]
    session._facts = EngineFacts("builtin", {}, "x", None, None, None)
    async with series.subscribe() as sub:
        sample = await session.measure(RequestSpec("code", "p", 64, True, False, text="hi"))
        (live,) = sub.pending()
    assert seen == [sample] and live.source == "request" and live.t == 7.0
    assert series.snapshot() == [live]
