"""The per-round curve in one line, from pooled figures.

`RoundCurve.summary` reads the first and the last window (`commit 1.80 -> 2.00` for a
request whose commit was 7.06): two windows of a few rounds each, not what the request
did. This pools every round instead, as every other figure in the console is pooled:
commit = tokens / rounds, step = time / rounds, over the whole request and over its
first and second half by context, so a fall with context shows with its true size.
"""

from __future__ import annotations

from collections.abc import Sequence

from console.analysis.round_curve import CurveWindow, RoundCurve


def _pooled(windows: Sequence[CurveWindow]) -> tuple[float, float] | None:
    """(commit, step seconds) pooled over these windows' rounds."""
    rounds = sum(w.rounds for w in windows)
    if rounds == 0:
        return None
    return sum(w.tokens for w in windows) / rounds, sum(w.time_s for w in windows) / rounds


def pooled_summary(curve: RoundCurve) -> str:
    """One line: the pooled commit and step of all rounds, then of each half."""
    windows = curve.windows
    whole = _pooled(windows)
    if whole is None:
        return "per-round curve: no rounds reported"
    half = max(1, len(windows) // 2)
    first, second = _pooled(windows[:half]), _pooled(windows[half:])
    text = (
        f"per-round curve ({len(curve.rounds)} rounds): commit {whole[0]:.2f}, step "
        f"{whole[1] * 1000:.2f} ms pooled"
    )
    if first is not None and second is not None:
        text += (
            f"; by context {windows[0].context_start}-{windows[half - 1].context_end}: "
            f"{first[0]:.2f} / {first[1] * 1000:.2f} ms, {windows[half].context_start}-"
            f"{windows[-1].context_end}: {second[0]:.2f} / {second[1] * 1000:.2f} ms"
        )
    where = curve.looping_from
    if where is not None:
        text += f"; LOOPING from context {where} (commit there is repetition)"
    return text
