"""Two-point and stream-check figures carry intervals, and a two-point figure that differs
from the whole request's says why (commit changing over the request, a looping output)."""

from __future__ import annotations

import random

from console.analysis.records import RequestSample
from console.analysis.two_point import stream_figures, two_point_figures


def _req(n: int, steps: int, decode: float, *, latency: float, repetition: float | None = None,
         streamed: bool = False, client: float | None = None) -> RequestSample:  # fmt: skip
    return RequestSample(
        engine="builtin", endpoint="/generate", text_type="code", prompt_id="code@256#0",
        context_tokens=256, max_tokens=n, ignore_eos=True, streamed=streamed, flags_hash="abc",
        completion_tokens=n, finish_reason="length", latency_s=latency, ttft_s=0.01 if streamed
        else None, decode_time_s=decode, decode_source="server", verify_steps=steps,
        decode_tok_s=(n - 1) / decode, commit_len=(n - 1) / steps, step_time_s=decode / steps,
        repetition=repetition, client_decode_tok_s=client,
    )  # fmt: skip


def _pairs(later_commit: float, *, repetition: float | None = None, seed: int = 0) -> list:
    """N1 = 32 at commit 2 a round, then N1..N2 = 160 at `later_commit`; 4 ms a round."""
    rng = random.Random(seed)
    out = []
    for _ in range(4):
        s1 = 16
        s2 = s1 + round(128 / later_commit)
        j = lambda: rng.gauss(1.0, 0.02)  # noqa: E731
        out.append(_req(32, s1, s1 * 0.004 * j(), latency=0.02 + s1 * 0.004 * j()))
        out.append(_req(160, s2, s2 * 0.004 * j(), latency=0.02 + s2 * 0.004 * j(),
                        repetition=repetition))  # fmt: skip
    return out


def test_two_point_figures_carry_intervals() -> None:
    f = two_point_figures(_pairs(2.0), 32, 160)
    for key in ("twopoint_tok_s", "server_tok_s", "whole_request_tok_s", "gap"):
        iv = f["intervals"][key]
        assert iv["low"] < iv["value"] < iv["high"], (key, iv)
    assert f["gap_reasons"] == ["two-point and whole-request figures agree within their interval"]


def test_a_gap_from_commit_changing_over_the_request_is_explained() -> None:
    f = two_point_figures(_pairs(5.0), 32, 160)
    assert f["intervals"]["gap"]["low"] > 1.0  # the later span is faster than the whole
    assert f["spans"]["first_commit"] < 2.0 < 4.5 < f["spans"]["later_commit"]
    assert any("commit changes over the request" in r for r in f["gap_reasons"]), f
    looping = two_point_figures(_pairs(5.0, repetition=0.8), 32, 160)
    assert any("the output loops (80%" in r for r in looping["gap_reasons"])


def test_stream_check_says_not_sure_when_the_gap_straddles_the_tolerance() -> None:
    plain = [_req(128, 40, 0.16, latency=0.2) for _ in range(3)]  # the engine's: 793.8 tok/s

    def streamed(*client: float) -> list:
        return [_req(128, 40, 0.16, latency=0.2, streamed=True, client=c) for c in client]

    far = stream_figures(plain + streamed(180.0, 200.0, 220.0), 0.30)
    assert far["distorted"] and far["gap_interval"]["high"] < -0.3
    near = stream_figures(plain + streamed(450.0, 560.0, 680.0), 0.30)
    assert not near["distorted"] and near["verdict"].startswith("not sure"), near["verdict"]
    assert near["stream_client_tok_s"]["low"] < near["stream_client_tok_s"]["high"]
