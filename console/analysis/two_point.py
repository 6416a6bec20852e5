"""The two-point and stream-check figures, each with its interval, and why they differ.

Two-point: (N2 - N1) / (T(N2) - T(N1)) on the same prompt covers decode tokens N1..N2
only; a whole-request figure ((N - 1) / decode time of the N2 request) covers 1..N2. They
differ for reasons that have nothing to do with the measurement being wrong: commit can
change over the request (acceptance falls as the context grows, or the output falls into
a loop, which a drafter predicts perfectly), and step time can change (the first rounds
are slower). With the engine's verify steps those two spans are measured apart:
commit over the first N1 tokens = (N1 - 1) / steps(N1), over N1..N2 = (N2 - N1) /
(steps(N2) - steps(N1)); step time the same way; the gap is explained by whichever moved.

Intervals: a percentile bootstrap over requests, the N1 and N2 requests resampled
independently (`intervals.bootstrap_many`), medians of each resample, seeded.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from console.analysis.intervals import Interval, bootstrap_many
from console.analysis.records import RequestSample
from console.analysis.round_curve import LOOP_SHARE
from console.analysis.thresholds import MATTERS

RESAMPLES = 500


def _median(values: Sequence[float]) -> float:
    if not values:
        raise ZeroDivisionError  # a draw without the figure: skipped by the bootstrap
    return statistics.median(values)


def _rate(tokens: float, seconds: float) -> float:
    if seconds <= 0:
        raise ZeroDivisionError
    return tokens / seconds


def _server(samples: Sequence[RequestSample]) -> list[float]:
    return [s.decode_time_s for s in samples if s.decode_source == "server" and s.decode_time_s]


def _steps(samples: Sequence[RequestSample]) -> list[float]:
    return [float(s.verify_steps) for s in samples if s.verify_steps]


def two_point_figures(
    samples: Sequence[RequestSample], n1: int, n2: int, *, seed: int = 0
) -> dict[str, Any]:
    """Client and server two-point rates, the whole-request rate, each span's commit and
    step time, each with its interval, and the gap between two-point and whole-request
    figures with the reasons for it."""
    short = [s for s in samples if s.max_tokens == n1 and s.ok]
    long = [s for s in samples if s.max_tokens == n2 and s.ok]
    figures: dict[str, Any] = {"n1": n1, "n2": n2, "pairs": min(len(short), len(long))}
    if not short or not long:
        figures["error"] = "no unflagged pair of requests"
        return figures
    span = n2 - n1

    def client(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> float:
        return _rate(span, _median([s.latency_s for s in b]) - _median([s.latency_s for s in a]))

    def server(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> float:
        return _rate(span, _median(_server(b)) - _median(_server(a)))

    def whole(_a: Sequence[RequestSample], b: Sequence[RequestSample]) -> float:
        return _rate(sum(s.completion_tokens - 1 for s in b), sum(_server(b)) or -1.0)

    def gap(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> float:
        return server(a, b) / whole(a, b)

    stats: dict[str, Callable[..., float]] = {
        "twopoint_tok_s": client, "server_tok_s": server, "whole_request_tok_s": whole,
        "gap": gap,
    }  # fmt: skip
    named = _intervals([short, long], stats, seed)
    figures.update({k: (v.value if v else None) for k, v in named.items()})
    figures["intervals"] = {k: v.as_dict() for k, v in named.items() if v}
    if named["twopoint_tok_s"] and named["server_tok_s"]:
        figures["agreement"] = named["twopoint_tok_s"].value / named["server_tok_s"].value - 1
    figures["spans"] = _spans(short, long, n1, n2)
    figures["gap_reasons"] = gap_reasons(figures["spans"], named.get("gap"), long)
    return figures


def _intervals(
    groups: list[list[RequestSample]], stats: dict[str, Callable[..., float]], seed: int
) -> dict[str, Interval | None]:
    """Each statistic with its interval; None where the point itself cannot be computed
    (no server decode time, T(N2) not above T(N1))."""
    out: dict[str, Interval | None] = {}
    for name, stat in stats.items():
        try:
            stat(*groups)
        except ZeroDivisionError:
            out[name] = None
            continue
        (out[name],) = bootstrap_many(groups, [stat], resamples=RESAMPLES, seed=seed)
    return out


def _spans(
    short: Sequence[RequestSample], long: Sequence[RequestSample], n1: int, n2: int
) -> dict[str, Any] | None:
    """Commit and step time over the first N1 tokens and over N1..N2 (medians of the
    requests' steps and decode times); None without the engine's verify steps."""
    s1, s2 = _steps(short), _steps(long)
    d1, d2 = _server(short), _server(long)
    if not s1 or not s2 or statistics.median(s2) <= statistics.median(s1):
        return None
    steps1, steps2 = statistics.median(s1), statistics.median(s2)
    out: dict[str, Any] = {
        "first_commit": (n1 - 1) / steps1,
        "later_commit": (n2 - n1) / (steps2 - steps1),
    }
    if d1 and d2 and statistics.median(d2) > statistics.median(d1):
        t1, t2 = statistics.median(d1), statistics.median(d2)
        out["first_step_s"] = t1 / steps1
        out["later_step_s"] = (t2 - t1) / (steps2 - steps1)
    reps = [s.repetition for s in long if s.repetition is not None]
    out["repeated"] = statistics.median(reps) if reps else None
    return out


def gap_reasons(
    spans: dict[str, Any] | None, gap: Interval | None, long: Sequence[RequestSample]
) -> list[str]:
    """Why the two-point figure (tokens N1..N2) differs from the whole request's."""
    if gap is None:
        return []
    if gap.contains(1.0):
        return ["two-point and whole-request figures agree within their interval"]
    if spans is None:
        return ["the engine reports no verify steps, so the spans cannot be told apart"]
    reasons = []
    repeated = spans.get("repeated")
    if repeated is not None and repeated >= LOOP_SHARE:
        reasons.append(f"the output loops ({repeated:.0%} of its 8-grams repeat): a loop is "
                       "easy to draft, so the later tokens commit more")  # fmt: skip
    c1, c2 = spans["first_commit"], spans["later_commit"]
    if abs(c2 / c1 - 1) > MATTERS:
        reasons.append(f"commit changes over the request: {c1:.2f} a round over the first "
                       f"tokens, {c2:.2f} over the two-point span")  # fmt: skip
    t1, t2 = spans.get("first_step_s"), spans.get("later_step_s")
    if t1 and t2 and abs(t2 / t1 - 1) > MATTERS:
        reasons.append(f"step time changes over the request: {t1 * 1000:.2f} ms a round at "
                       f"first, {t2 * 1000:.2f} ms over the two-point span")  # fmt: skip
    return reasons or ["neither commit nor step time differs between the spans by over 10%"]


def stream_figures(
    samples: Sequence[RequestSample], tolerance: float, *, seed: int = 0
) -> dict[str, Any]:
    """Streamed client-side tok/s against the engine's non-streamed figure (medians, each
    with its interval, and the gap's); "distorted" only when the gap's interval lies
    beyond `tolerance`, "not sure" when it straddles it."""
    streamed = [s for s in samples if s.streamed and s.ok]
    plain = [s for s in samples if not s.streamed and s.ok]

    def client(a: Sequence[RequestSample], _b: Sequence[RequestSample]) -> float:
        return _median([s.client_decode_tok_s for s in a if s.client_decode_tok_s])

    def engine_streamed(a: Sequence[RequestSample], _b: Sequence[RequestSample]) -> float:
        return _median([s.decode_tok_s for s in a if s.decode_tok_s
                        and s.decode_source in ("server", "server-metrics")])  # fmt: skip

    def reference(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> float:
        # The engine's own figure for the non-streamed request: streaming itself slows the
        # engine's first rounds a little, and the question is what a non-streaming
        # measurement would say.
        values = [s.decode_tok_s for s in b if s.decode_tok_s]
        return _median(values) if values else engine_streamed(a, b)

    def gap(a: Sequence[RequestSample], b: Sequence[RequestSample]) -> float:
        return client(a, b) / reference(a, b) - 1

    named = _intervals([streamed, plain], {
        "stream_client_tok_s": client, "stream_server_tok_s": engine_streamed,
        "plain_tok_s": reference, "gap": gap}, seed)  # fmt: skip
    ttfts = [s.ttft_s for s in streamed if s.ttft_s is not None]
    figures: dict[str, Any] = {k: v.as_dict() if v else None for k, v in named.items()}
    figures["ttft_s"] = statistics.median(ttfts) if ttfts else None
    g = named["gap"]
    if g is None:
        return figures
    figures["gap"] = g.value
    figures["gap_interval"] = g.as_dict()
    beyond = abs(g.low) > tolerance and abs(g.high) > tolerance and g.low * g.high > 0
    within = max(abs(g.low), abs(g.high)) <= tolerance
    figures["distorted"] = beyond
    c, r = named["stream_client_tok_s"], named["plain_tok_s"]
    seen = f"the client sees {c.text('{:.1f}')} tok/s where the engine did {r.text('{:.1f}')}"
    if beyond:
        figures["verdict"] = (f"streaming over this link distorts decode rate: {seen} "
                              f"({g.value:+.0%}); measure without streaming here")  # fmt: skip
    elif within:
        figures["verdict"] = (f"streamed figures agree with the engine's within {tolerance:.0%} "
                              f"({seen}): this link does not distort streaming")  # fmt: skip
    else:
        figures["verdict"] = (f"not sure: {seen}; the gap's interval "
                              f"[{g.low:+.0%}…{g.high:+.0%}] straddles the {tolerance:.0%} a "
                              "distorting link shows; --repeat more")  # fmt: skip
    return figures
