"""The two-point and stream-check lines both front ends show: every figure with its
interval, and the reason a two-point figure differs from the whole request's."""

from __future__ import annotations

from console.experiments.method_lines import stream_check_lines, two_point_lines
from console.measure.methods import MethodResult


def _iv(value: float, low: float, high: float) -> dict[str, float]:
    return {"value": value, "low": low, "high": high}


def test_two_point_lines_carry_intervals_and_explain_the_gap() -> None:
    figures = {
        "twopoint_tok_s": 1533.0, "pairs": 3, "server_tok_s": 1500.0, "agreement": 0.022,
        "whole_request_tok_s": {"median": 956.0},
        "intervals": {"twopoint_tok_s": _iv(1533.0, 1400.0, 1650.0),
                      "server_tok_s": _iv(1500.0, 1420.0, 1590.0),
                      "whole_request_tok_s": _iv(956.0, 900.0, 1010.0),
                      "gap": _iv(1.6, 1.4, 1.8)},
        "spans": {"first_commit": 3.1, "later_commit": 7.2},
        "gap_reasons": ["commit rises over the request (3.10 -> 7.20): looping output"],
    }  # fmt: skip
    lines = two_point_lines(MethodResult("two-point", 4, [], [], figures), 32, 160)
    text = "\n".join(lines)
    assert "two-point decode: 1533.0 [1400.0–1650.0] tok/s" in text
    assert "whole-request decode (N=160, server, tokens 1..160): 956.0 [900.0–1010.0]" in text
    assert "x1.60 [1.40–1.80]" in text and "why: commit rises" in text
    assert "one pair" not in text  # three pairs resample


def test_one_pair_says_it_has_no_interval_and_no_result_says_why() -> None:
    one = {"twopoint_tok_s": 1200.0, "pairs": 1}
    assert "one pair has no spread" in "\n".join(
        two_point_lines(MethodResult("two-point", 1, [], [], one), 32, 160))  # fmt: skip
    none = two_point_lines(
        MethodResult("two-point", 1, [], [], {"error": "T(N2) <= T(N1)"}), 32, 160
    )
    assert none == ["two-point: no result (T(N2) <= T(N1))"]


def test_stream_lines_carry_intervals_and_the_verdict() -> None:
    figures = {"stream_client_tok_s": 300.0, "plain_tok_s": 1100.0,
               "intervals": {"stream_client_tok_s": _iv(300.0, 250.0, 340.0),
                             "plain_tok_s": _iv(1100.0, 1050.0, 1150.0)},
               "verdict": "streaming over this link distorts decode figures"}  # fmt: skip
    lines = stream_check_lines(MethodResult("stream-check", 2, [], [], figures))
    assert lines[0].startswith("streamed, client-side") and "300.0 [250.0–340.0] tok/s" in lines[0]
    assert "1100.0 [1050.0–1150.0]" in lines[1] and lines[-1].startswith("streaming over")
