"""The two-point and stream-check results as lines of text, for every front end.

`specconsole twopoint` and `streamcheck` print these figures; the TUI's sweeps view
shows the same lines, so both read `MethodResult.figures` the same way and neither
holds arithmetic of its own (the figures are computed in `measure.methods`).
"""

from __future__ import annotations

from console.measure.methods import MethodResult

STREAM_FIGURES = (
    ("streamed, client-side", "stream_client_tok_s"),
    ("streamed, engine's figure", "stream_server_tok_s"),
    ("not streamed, engine's figure", "plain_tok_s"),
)


def two_point_lines(result: MethodResult, n1: int, n2: int) -> list[str]:
    f = result.figures
    if f.get("twopoint_tok_s") is None:
        return [f"two-point: no result ({f.get('error', 'T(N2) was not above T(N1)')})"]
    lines = [
        f"two-point decode: {f['twopoint_tok_s']:.1f} tok/s = ({n2} - {n1}) tokens / "
        f"(T({n2}) - T({n1})), medians of {f['pairs']} pairs, client wall time"
    ]
    if f.get("server_tok_s"):
        lines.append(
            f"server decode time, same tokens: {f['server_tok_s']:.1f} tok/s "
            f"({f['agreement']:+.1%})"
        )
    if f.get("whole_request_tok_s"):
        lines.append(
            f"whole-request decode (N={n2}, server): {f['whole_request_tok_s']['median']:.1f} tok/s"
        )
    return lines


def stream_check_lines(result: MethodResult) -> list[str]:
    f = result.figures
    lines = [
        f"{label:<32}{f[key]['median']:.1f} tok/s" for label, key in STREAM_FIGURES if f.get(key)
    ]
    lines.append(f.get("verdict", "no verdict: the streamed or the plain requests gave no figure"))
    return lines
