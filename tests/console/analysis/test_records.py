"""The shared floor: provenance strings, number formatters, typed baseline results."""

from __future__ import annotations

import json

import pytest

from console.analysis import format as fmt
from console.analysis.records import LiveSample, RequestSample
from console.analysis.stats import Spread, summarize
from console.experiments.baseline import baseline_comparison, comparison_lines
from console.measure.methods import MethodResult


def _request(tok_s: float, commit: float, *, text: str = "prose", **kw: object) -> RequestSample:
    fields: dict = dict(
        engine="builtin", endpoint="/generate", text_type=text, prompt_id="p",
        context_tokens=1024, max_tokens=64, ignore_eos=True, streamed=False, flags_hash="x",
        completion_tokens=64, finish_reason="length", latency_s=1.0, ttft_s=None,
        decode_time_s=63 / tok_s, decode_source="server", verify_steps=round(63 / commit),
        decode_tok_s=tok_s, commit_len=commit, step_time_s=commit / tok_s,
    )  # fmt: skip
    fields.update(kw)
    return RequestSample(**fields)


def test_one_provenance_string_per_sample() -> None:
    assert _request(100.0, 4.0).provenance == (
        "server decode time, non-streaming, ctx 1024, 64 tok, prose"
    )
    streamed = _request(100.0, 4.0, text="code", streamed=True, decode_source="client-stream")
    assert streamed.provenance == "client stream timing, streamed, ctx 1024, 64 tok, code"
    assert LiveSample(t=1.0, source="log", context_tokens=300).provenance == (
        "engine log line, ctx 300"
    )
    assert LiveSample(t=1.0, source="metrics").provenance == "/metrics delta"


def test_formatters_render_each_figure_one_way() -> None:
    assert (fmt.tok_s(105.26), fmt.commit(3.5), fmt.step_ms(0.03512)) == ("105.3", "3.50", "35.12")
    assert (fmt.ttft_ms(0.0421), fmt.tok_s(None), fmt.count(None)) == ("42.1", "-", "-")
    assert (fmt.percent_change(20.0), fmt.percent_change(None)) == ("+20.0%", "-")
    assert fmt.ratio_change(0.9) == "-10%"
    assert fmt.spread(Spread(3.5, 3.0, 4.0, 3), fmt.COMMIT) == "3.50 [3.00–4.00]"
    assert fmt.spread(Spread(0.035, 0.035, 0.035, 1), fmt.STEP_MS) == "35.00"
    assert (fmt.duration(185), fmt.duration(3720), fmt.duration(None)) == ("3m05s", "1h02m", "-")
    assert fmt.age(4.2) == "4 s old"
    # Spread.text (the older spelling) agrees with the formatter
    three = Spread(3.5, 3.0, 4.0, 3)
    assert three.text("{:.2f}") == fmt.spread(three, fmt.COMMIT)


def _baseline(rates: list[float], commit: float) -> MethodResult:
    samples = [
        _request(t, commit, context_tokens=256, prompt_id=f"prose@256#{i}")
        for i, t in enumerate(rates)
    ]
    return MethodResult("context-sweep", None, samples, summarize(samples))


def test_baseline_comparison_is_pooled_with_intervals_and_keeps_its_json_shape() -> None:
    before, after = _baseline([99.0, 100.0, 101.0], 4.0), _baseline([118.0, 120.0, 122.0], 5.0)
    (row,) = baseline_comparison(before, after)
    assert row.text_type == "prose" and row.context == 256
    assert (row.n_before, row.n_after) == (3, 3)
    t, c, st = row.decode_tok_s, row.commit_len, row.step_time_s
    for side in ("a", "b"):  # pooled: tok/s = commit / step on both sides, exactly
        assert getattr(t, side) == pytest.approx(getattr(c, side) / getattr(st, side), rel=1e-12)
    assert t.change.ratio == pytest.approx(c.change.ratio / st.change.ratio, rel=1e-12)
    assert t.a == pytest.approx(189 / sum(63 / r for r in (99.0, 100.0, 101.0)))
    assert t.finding and t.moved.ratio.low > 1.15 and t.change_text().startswith("+20% [")
    # commit 63/16 -> 63/13 on every request: a finding with a point interval
    assert c.finding and row.moved.startswith("commit +23% [+23%…+23%]")
    assert [label for label, _ in row.factors] == ["commit"] + (["step time"] if st.finding else [])
    data = row.as_dict()
    tok = data["decode_tok_s"]
    assert set(tok) == {"before", "after", "change", "before_interval", "after_interval",
                        "change_interval"}  # fmt: skip
    assert tok["before"] == pytest.approx(t.a) and tok["change"] == pytest.approx(0.2, abs=0.01)
    assert tok["before_interval"]["low"] <= tok["before"] <= tok["before_interval"]["high"]
    assert tok["change_interval"]["finding"] is True and data["factors_moved"][0] == "commit"
    json.dumps(data)
    header, first, *_ = comparison_lines([row])
    assert "which factor moved" in header
    assert first.split()[:4] == ["prose", "256", "tok/s", "100.0"]


def test_an_unchanged_baseline_is_within_noise_and_names_no_factor() -> None:
    rates = [97.0, 100.0, 103.0, 98.5, 101.5]
    before, after = _baseline(rates, 4.0), _baseline(list(reversed(rates)), 4.0)
    (row,) = baseline_comparison(before, after)
    assert not row.decode_tok_s.finding
    assert row.decode_tok_s.change_text().startswith("within noise (")
    assert row.moved == "neither factor moved beyond noise" and row.factors == []
    # four times the spread: still no finding, but a 95% interval that reaches past ± 15%,
    # too wide to say physics (three times reads ± 13% at 95%: within, by the one reading)
    wide = [100.0 + 4 * (r - 100.0) for r in rates]
    (row,) = baseline_comparison(_baseline(wide, 4.0), _baseline(list(reversed(wide)), 4.0))
    assert not row.decode_tok_s.finding and row.factors == []
    assert row.moved.startswith("too wide to tell (tok/s ± ")


def test_a_flag_typed_as_text_hashes_as_the_value_the_config_holds() -> None:
    from console.analysis.records import flags_hash

    held = {"context-length": 2048, "tree-budget": 8, "mem-fraction": 0.5, "stream": True}
    typed = {"context-length": "2048", "tree-budget": " 8", "mem-fraction": "0.50",
             "stream": "true"}  # fmt: skip
    assert flags_hash(typed) == flags_hash(held)
    assert flags_hash({**held, "tree-budget": 9}) != flags_hash(held)
    # text that is not a finite number stays text, case and all
    assert flags_hash({"reasoning-parser": "qwen3"}) != flags_hash({"reasoning-parser": "Qwen3"})
    assert flags_hash({"dtype": "inf"}) != flags_hash({"dtype": float("inf")})
