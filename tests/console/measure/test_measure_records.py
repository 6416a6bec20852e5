"""The shared floor: provenance strings, number formatters, typed baseline results."""

from __future__ import annotations

import json

import pytest

from console.measure import format as fmt
from console.measure.baseline import baseline_comparison, comparison_lines
from console.measure.methods import MethodResult
from console.measure.records import LiveSample, RequestSample
from console.measure.stats import Spread, summarize


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


def test_baseline_comparison_is_typed_and_keeps_its_json_shape() -> None:
    def result(tok_s: float, commit: float) -> MethodResult:
        samples = [_request(tok_s, commit, context_tokens=256)]
        return MethodResult("context-sweep", None, samples, summarize(samples))

    (row,) = baseline_comparison(result(100.0, 4.0), result(120.0, 5.0))
    assert row.text_type == "prose" and row.context == 256
    assert row.decode_tok_s.a == 100.0 and row.decode_tok_s.b == 120.0
    assert row.decode_tok_s.change.fraction == pytest.approx(0.2)
    assert row.moved == "commit +25%"  # step time 40 -> 41.7 ms: under 5%
    data = row.as_dict()
    assert data["decode_tok_s"] == {"before": 100.0, "after": 120.0, "change": pytest.approx(0.2)}
    assert data["moved"] == "commit +25%"
    json.dumps(data)
    header, line = comparison_lines([row])
    assert "which factor moved" in header
    assert line.split()[:4] == ["prose", "100.0", "120.0", "+20%"]
