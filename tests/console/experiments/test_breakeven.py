"""Break-even arithmetic: needed = spec step / AR step, speedup = measured / needed (= the
tok/s ratio) on every row, intervals that hold their value and narrow with agreeing
requests, the flag changes that switch speculation off per engine, and the restore."""

from __future__ import annotations

import math
import random

import pytest

from console.analysis.intervals import Interval
from console.analysis.records import RequestSample
from console.experiments.breakeven import (
    BreakevenRow,
    breakeven_row,
    breakeven_rows,
    pays_summary,
    pool,
    restore_changes,
    same_flags,
    speculation_off,
    stored_rows,
    table_lines,
)
from console.measure.session import MeasureError

SPEC, AR = "spec00000000", "ar0000000000"


def sample(
    context: int, n: int, steps: int, decode_s: float, flags: str, **changes: object
) -> RequestSample:
    values: dict[str, object] = {
        "engine": "builtin", "endpoint": "/generate", "text_type": "code",
        "prompt_id": f"code@{context}#0", "context_tokens": context, "max_tokens": n,
        "ignore_eos": True, "streamed": False, "flags_hash": flags, "completion_tokens": n,
        "finish_reason": "length", "latency_s": decode_s + 0.05, "ttft_s": None,
        "decode_time_s": decode_s, "decode_source": "server", "verify_steps": steps,
        "decode_tok_s": (n - 1) / decode_s, "commit_len": (n - 1) / steps,
        "step_time_s": decode_s / steps,
    }  # fmt: skip
    values.update(changes)
    return RequestSample(**values)  # type: ignore[arg-type]


def _samples(seed: int = 1) -> list[RequestSample]:
    rng = random.Random(seed)
    out = []
    for context, ar_ms, spec_ms in ((64, 3.0, 11.0), (1000, 5.0, 19.0), (1900, 7.0, 33.0)):
        for _ in range(4):
            n = 65
            ar_steps = n - 1  # one token a step without speculation
            ar_s = ar_steps * ar_ms / 1000 * rng.uniform(0.9, 1.1)
            out.append(sample(context, n, ar_steps, ar_s, AR))
            steps = rng.randint(12, 24)
            out.append(
                sample(context, n, steps, steps * spec_ms / 1000 * rng.uniform(0.9, 1.1), SPEC)
            )
    rng.shuffle(out)
    return out


def test_speedup_is_measured_over_needed_commit_on_every_row() -> None:
    rows = breakeven_rows(_samples(), spec_hash=SPEC, ar_hash=AR, seed=0)
    assert [r.context for r in rows] == [64, 1000, 1900]
    for r in rows:
        assert math.isclose(r.needed_commit.value, r.spec_step_s.value / r.ar_step_s.value)
        assert math.isclose(r.speedup.value, r.measured_commit.value / r.needed_commit.value)
        # ... which is exactly speculative tok/s over autoregressive tok/s
        assert math.isclose(r.speedup.value, r.spec_tok_s / r.ar_tok_s)
        # "pays" only where the whole interval is on one side of 1
        sure = r.speedup.low > 1 or r.speedup.high < 1
        assert r.pays == (r.speedup.value > 1 if sure else None)
        assert (r.ar_requests, r.spec_requests) == (4, 4)


def test_figures_are_pooled_not_averaged() -> None:
    # Two spec requests: 63 tokens in 9 steps over 0.09 s, and 63 in 21 over 0.42 s.
    spec = [sample(64, 64, 9, 0.09, SPEC), sample(64, 64, 21, 0.42, SPEC)]
    ar = [sample(64, 64, 63, 0.189, AR), sample(64, 64, 63, 0.252, AR)]
    p = pool(spec, ar)
    assert math.isclose(p.commit, 126 / 30)  # sum of tokens / sum of steps
    assert math.isclose(p.spec_step_s, 0.51 / 30)  # sum of time / sum of steps
    assert math.isclose(p.ar_step_s, 0.441 / 126)  # AR: time per token = per step
    assert math.isclose(p.speedup, (126 / 0.51) / (126 / 0.441))


def test_intervals_hold_the_value_are_seeded_and_narrow_when_requests_agree() -> None:
    samples = _samples()
    a = breakeven_rows(samples, spec_hash=SPEC, ar_hash=AR, seed=7)
    b = breakeven_rows(samples, spec_hash=SPEC, ar_hash=AR, seed=7)
    assert [r.as_dict() for r in a] == [r.as_dict() for r in b]  # same seed, same intervals
    for r in a:
        for iv in (r.ar_step_s, r.spec_step_s, r.needed_commit, r.measured_commit, r.speedup):
            assert iv.low <= iv.value <= iv.high
        assert r.speedup.low < r.speedup.high  # four differing requests: a real spread
    # Identical requests: nothing to resample, the interval is the point.
    row = breakeven_row(
        64, [sample(64, 33, 8, 0.08, SPEC)] * 3, [sample(64, 33, 32, 0.096, AR)] * 3
    )
    assert row.speedup.low == row.speedup.value == row.speedup.high
    assert math.isclose(row.needed_commit.value, (0.08 / 8) / (0.096 / 32))
    # A wide spread of step times gives a wider interval than a tight one.
    rng = random.Random(3)
    wide = [sample(64, 33, 8, 0.08 * rng.uniform(0.5, 1.5), SPEC) for _ in range(6)]
    tight = [sample(64, 33, 8, 0.08 * rng.uniform(0.98, 1.02), SPEC) for _ in range(6)]
    ar = [sample(64, 33, 32, 0.096, AR)] * 6
    w, t = breakeven_row(64, wide, ar), breakeven_row(64, tight, ar)
    assert w.speedup.high - w.speedup.low > t.speedup.high - t.speedup.low


def test_flagged_requests_are_left_out_and_a_missing_arm_is_one_sentence() -> None:
    spec = [sample(64, 33, 8, 0.08, SPEC), sample(64, 20, 8, 0.5, SPEC, flagged="20 of 33")]
    ar = [sample(64, 33, 32, 0.096, AR)]
    row = breakeven_row(64, spec, ar)
    assert row.spec_requests == 1 and math.isclose(row.measured_commit.value, 32 / 8)
    with pytest.raises(MeasureError, match="No usable non-speculative request at context 64"):
        breakeven_row(64, spec, [sample(64, 33, 32, 0.096, AR, flagged="x")])


def test_rows_round_trip_through_the_stored_summary_and_print() -> None:
    rows = breakeven_rows(_samples(), spec_hash=SPEC, ar_hash=AR)
    back = stored_rows({"rows": [r.as_dict() for r in rows]})
    for r, b in zip(rows, back, strict=True):
        assert math.isclose(b.ar_step_s.value, r.ar_step_s.value)
        assert math.isclose(b.speedup.high, r.speedup.high)
    assert stored_rows(None) == []
    lines = table_lines(rows)
    notes = 1 if any(r.pays is None for r in rows) else 0  # the "not sure" line
    assert lines[0].split()[:3] == ["context", "AR", "step"] and len(lines) == 4 + notes
    assert isinstance(back[0], BreakevenRow)


def test_a_looping_output_is_marked_on_its_row() -> None:
    spec = [
        sample(64, 33, 4, 0.04, SPEC, repetition=0.8),
        sample(64, 33, 4, 0.04, SPEC, repetition=0.6),
    ]
    row = breakeven_row(64, spec, [sample(64, 33, 32, 0.096, AR)])
    assert math.isclose(row.repeated or 0, 0.7) and row.looping and row.as_dict()["looping"]
    assert "70% (loop)" in table_lines([row])[1] and "inflated" in table_lines([row])[-1]


def test_flags_that_switch_speculation_off_per_engine() -> None:
    assert speculation_off("builtin", {"port": 30000}) == {"speculative-algorithm": "NONE"}
    assert speculation_off("builtin", {"speculative-algorithm": "dflash"}) == {
        "speculative-algorithm": "NONE"
    }
    sglang = {"speculative-algorithm": "DFLASH", "speculative-draft-model-path": "/d",
              "speculative-num-draft-tokens": 16, "model-path": "/m"}  # fmt: skip
    assert speculation_off("sglang", sglang) == {
        "speculative-algorithm": None,
        "speculative-draft-model-path": None,
        "speculative-num-draft-tokens": None,
    }
    vllm = {"model": "/m", "speculative-config": '{"method": "dflash"}'}
    assert speculation_off("vllm", vllm) == {"speculative-config": None}
    for engine, flags in (
        ("builtin", {"speculative-algorithm": "NONE"}),
        ("sglang", {"model-path": "/m"}),
        ("vllm", {"model": "/m"}),
    ):
        with pytest.raises(MeasureError, match="already off"):
            speculation_off(engine, flags)


def test_restore_changes_take_the_flags_back() -> None:
    original = {"port": 30000, "skip-server-warmup": True, "speculative-algorithm": "DDTREE"}
    current = {"port": 30000, "speculative-algorithm": "NONE", "extra": 1}
    assert restore_changes(current, original) == {
        "extra": None,
        "skip-server-warmup": "true",
        "speculative-algorithm": "DDTREE",
    }
    assert restore_changes(original, original) == {}


def test_a_profiles_string_value_and_the_plans_parsed_one_are_the_same_flag() -> None:
    """A vLLM profile's `--flag max-model-len=2048` is the string "2048"; the plan that
    switched speculation off parsed it into 2048: restoring must not see a difference
    there (on real vLLM the run was reported "NOT restored" for it)."""
    original = {"max-model-len": "2048", "speculative-config": '{"method": "dflash"}'}
    current = {"max-model-len": 2048}
    assert restore_changes(current, original) == {"speculative-config": '{"method": "dflash"}'}
    assert same_flags({"max-model-len": 2048, "x": True}, {"max-model-len": "2048", "x": "true"})
    assert not same_flags(current, original)


def _row(value: float, low: float, high: float) -> BreakevenRow:
    one = Interval(1.0, 1.0, 1.0)
    return BreakevenRow(context=256, ar_step_s=one, spec_step_s=one, needed_commit=one,
                        measured_commit=one, speedup=Interval(value, low, high), ar_tok_s=1.0,
                        spec_tok_s=value, ar_requests=3, spec_requests=3)  # fmt: skip


def test_pays_only_when_the_speedup_interval_excludes_one() -> None:
    unsure, yes, no = _row(1.08, 0.72, 2.56), _row(1.4, 1.2, 1.6), _row(0.8, 0.7, 0.9)
    assert (unsure.pays, yes.pays, no.pays) == (None, True, False)
    assert [r.pays_text for r in (unsure, yes, no)] == ["not sure", "yes", "no"]
    table = "\n".join(table_lines([unsure]))
    assert "not sure" in table and "yes" not in table.split("\n")[1]
    assert pays_summary([unsure]) == "not sure at any context"
    assert pays_summary([yes, unsure]).startswith("pays up to ctx 256")
    assert unsure.as_dict()["pays"] is None and unsure.as_dict()["pays_text"] == "not sure"
    assert _row(1.4, 1.4, 1.4).pays is None  # one request an arm: no interval, not sure
