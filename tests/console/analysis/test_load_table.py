"""The load table on a synthetic engine whose cost per row is known: a verify forward
costs `FIXED + PER_ROW * rows`, one row a sequence for plain decoding and `TREE` rows a
sequence speculatively, and a speculative round commits `COMMIT` tokens. Speculation then
pays while COMMIT (FIXED + PER_ROW N) > FIXED + PER_ROW N TREE, and stops at
N* = FIXED (COMMIT - 1) / (PER_ROW (TREE - COMMIT)), which the table must find."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import pytest

from console.analysis.load_format import table_lines
from console.analysis.load_table import WaveCounters, crossing, load_table, pool, waves_of
from console.analysis.records import RequestSample
from tests.console.factories import request_sample

FIXED, PER_ROW, TREE, COMMIT = 1.0e-3, 0.1e-3, 16, 4.0
TRUE_CROSSING = FIXED * (COMMIT - 1) / (PER_ROW * (TREE - COMMIT))  # 2.5
TOKENS = 65  # completion tokens a request: 64 decode tokens


def _step_s(concurrency: int, speculative: bool) -> float:
    return FIXED + PER_ROW * concurrency * (TREE if speculative else 1)


def _wave(
    wave: int, concurrency: int, speculative: bool, rng: random.Random, *, steps: bool = True
) -> list[RequestSample]:
    """One wave: `concurrency` requests sent and answered together (no prefill time), each
    taking the batch's step time (times a wave-wide slow-down and a little noise)."""
    slow = math.exp(rng.gauss(0, 0.03))
    commit = COMMIT if speculative else 1.0
    n_steps = round((TOKENS - 1) / commit)
    out = []
    for j in range(concurrency):
        decode = n_steps * _step_s(concurrency, speculative) * slow * math.exp(rng.gauss(0, 0.01))
        out.append(request_sample(
            wave * 100 + j, flags_hash="spec" if speculative else "ar", completion_tokens=TOKENS,
            verify_steps=n_steps if steps and speculative else None, decode_time_s=decode,
            latency_s=decode, t=1000.0 + wave, concurrency=concurrency,
            wave=wave,
        ))  # fmt: skip
    return out


def _run(levels=(1, 2, 4, 8), waves=4, seed=3, steps=True) -> list[RequestSample]:
    rng = random.Random(seed)
    samples, wave = [], 0
    for speculative in (True, False):
        for n in levels:
            for _ in range(waves):
                samples += _wave(wave, n, speculative, rng, steps=steps)
                wave += 1
    return samples


def test_the_break_even_concurrency_is_where_the_cost_model_puts_it() -> None:
    table = load_table(_run(), spec_hash="spec", ar_hash="ar", seed=1)
    rows = {r.concurrency: r for r in table.rows}
    for n, row in rows.items():
        truth = COMMIT * _step_s(n, False) / _step_s(n, True)
        assert row.speedup is not None and row.speedup.low <= truth * 1.03
        assert row.speedup.high >= truth / 1.03
        assert row.spec.commit is not None and row.spec.commit.value == pytest.approx(COMMIT)
        assert row.spec.step_s.value == pytest.approx(_step_s(n, True), rel=0.05)
    assert [rows[n].pays for n in (1, 2, 4, 8)] == [True, True, False, False]
    be = table.breakeven
    assert be is not None and be.value is not None
    assert be.low is not None and be.high is not None
    assert be.low <= TRUE_CROSSING <= be.high and be.low >= 2 and be.high <= 4
    assert "stops paying at concurrency 2.5" in be.text()


def test_aggregate_is_the_streams_together_and_per_stream_is_pooled() -> None:
    table = load_table(_run(levels=(1, 4)), spec_hash="spec", ar_hash="ar")
    for row in table.rows:
        for level in (row.spec, row.ar):
            assert level is not None
            # all N streams of a wave run at once: the aggregate is about N per-stream rates
            ratio = level.aggregate_tok_s.value / level.stream_tok_s.value
            assert ratio == pytest.approx(row.concurrency * TOKENS / (TOKENS - 1), rel=0.05)
    samples = [s for s in _run(levels=(4,)) if s.flags_hash == "spec"]
    pooled = pool(waves_of(samples))
    assert pooled.stream_tok_s == pytest.approx(
        sum(s.completion_tokens - 1 for s in samples) / sum(s.decode_time_s for s in samples)
    )


def test_a_wave_is_resampled_whole() -> None:
    """A slow wave slows all its requests: resampled request by request, the interval of
    a level of two waves would be narrower than the waves' own spread allows."""
    rng = random.Random(0)
    fast, slow = _wave(0, 8, True, rng), _wave(1, 8, True, rng)
    slow = [s.__class__(**{**s.as_dict(), "decode_time_s": s.decode_time_s * 1.4}) for s in slow]
    table = load_table(fast + slow, spec_hash="spec", ar_hash=None)
    stream = table.rows[0].spec.stream_tok_s
    one = pool([fast]).stream_tok_s
    assert stream.high == pytest.approx(one, rel=0.02)  # a draw of the fast wave twice
    assert table.breakeven is None and table.rows[0].speedup is None


def test_verify_steps_counted_around_each_wave_give_the_commit() -> None:
    """vLLM under load: the replies carry no verify steps; the counters around each wave do."""
    samples = _run(levels=(1, 2), steps=False)
    spec_waves = waves_of([s for s in samples if s.flags_hash == "spec"])
    counted = {w[0].wave: len(w) * round((TOKENS - 1) / COMMIT) for w in spec_waves}
    without = load_table(samples, spec_hash="spec", ar_hash="ar")
    assert all(r.spec.commit is None for r in without.rows)
    table = load_table(samples, spec_hash="spec", ar_hash="ar",
                       counted=WaveCounters(steps=counted))  # fmt: skip
    assert all(r.spec.commit.value == pytest.approx(COMMIT) for r in table.rows)


def test_decode_time_counted_around_each_wave_replaces_the_streams_own_clock() -> None:
    """vLLM under load: a stream's bursts make its own decode time wrong (here each
    reply's is a third of the truth); the decode-time histogram's sum around each wave
    is the wave's requests' decode time, and the per-stream rate comes from it."""
    truth = _run(levels=(1, 2))
    spec_waves = waves_of([s for s in truth if s.flags_hash == "spec"])
    decode = {w[0].wave: sum(s.decode_time_s for s in w) for w in spec_waves}
    bursty = [replace(s, decode_time_s=s.decode_time_s / 3) if s.flags_hash == "spec" else s
              for s in truth]  # fmt: skip
    right = load_table(truth, spec_hash="spec", ar_hash="ar")
    wrong = load_table(bursty, spec_hash="spec", ar_hash="ar")
    fixed = load_table(bursty, spec_hash="spec", ar_hash="ar",
                       counted=WaveCounters(decode_s=decode))  # fmt: skip
    for r, w, f in zip(right.rows, wrong.rows, fixed.rows, strict=True):
        assert w.spec.stream_tok_s.value == pytest.approx(3 * r.spec.stream_tok_s.value)
        assert f.spec.stream_tok_s.value == pytest.approx(r.spec.stream_tok_s.value)
        assert f.speedup.value == pytest.approx(r.speedup.value)
    # a stream that arrived in one burst has no decode time of its own: its wave's counts
    burst = [replace(s, decode_time_s=None) if s.flags_hash == "spec" else s for s in truth]
    counted = load_table(burst, spec_hash="spec", ar_hash="ar",
                         counted=WaveCounters(decode_s=decode))  # fmt: skip
    assert [r.spec.stream_tok_s.value for r in counted.rows] == pytest.approx(
        [r.spec.stream_tok_s.value for r in right.rows]
    )
    # stored and read back with the run's summary, as the history recomputes it
    again = WaveCounters.from_summary(
        json.loads(json.dumps(WaveCounters(decode_s=decode).as_summary()))
    )
    assert again.decode_s == decode and again.steps == {}


def test_the_drift_between_the_arms_widens_the_speedup_and_the_crossing() -> None:
    samples = _run()
    calm = load_table(samples, spec_hash="spec", ar_hash="ar", seed=2)
    drifty = load_table(samples, spec_hash="spec", ar_hash="ar", seed=2, drift_sd=0.15)
    for a, b in zip(calm.rows, drifty.rows, strict=True):
        assert b.speedup.high / b.speedup.low > 1.5 * (a.speedup.high / a.speedup.low)
    assert drifty.rows[1].pays is None  # 1.14x no longer tells from 1 under 15% drift
    width = drifty.breakeven.high - drifty.breakeven.low
    assert width > calm.breakeven.high - calm.breakeven.low


@pytest.mark.parametrize(
    ("speedups", "expected"),
    [
        ((2.0, 1.5, 1.2), math.inf),  # pays throughout
        ((0.9, 0.8, 0.5), 0.0),  # never pays
        ((2.0, 0.5), 2 ** (math.log(2) / (math.log(2) - math.log(0.5)))),  # log2 N = 0.5
        ((0.9, 1.2, 0.6), None),  # pays from the second level, stops after it
    ],
)
def test_crossing(speedups: tuple[float, ...], expected: float | None) -> None:
    levels = [1, 2, 4][: len(speedups)]
    got = crossing(levels, [math.log(v) for v in speedups])
    if expected is None:
        assert 2 < got < 4
    else:
        assert got == pytest.approx(expected)


def test_the_table_prints_and_its_json_holds() -> None:
    table = load_table(_run(levels=(1, 8)), spec_hash="spec", ar_hash="ar")
    text = "\n".join(table_lines(table))
    assert text.splitlines()[0].split()[:2] == ["conc", "arm"]
    assert "spec" in text and "AR" in text and "stops paying at concurrency" in text
    data = json.loads(json.dumps(table.as_dict()))
    assert [r["concurrency"] for r in data["rows"]] == [1, 8]
    assert data["rows"][0]["pays"] is True and data["rows"][1]["pays"] is False
    assert data["breakeven"]["low"] <= data["breakeven"]["value"] <= data["breakeven"]["high"]
