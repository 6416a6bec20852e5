"""The per-round curve inside one request: commit length and step time against context.

A request's mean commit length hides where it was earned. In one long generation the
drafter can commit five tokens a round early on and barely two by the end (acceptance
decaying as the context grows), while step time climbs with the KV cache; or the output
can fall into a loop, which a drafter predicts perfectly, so commit length *rises* for a
reason that has nothing to do with the drafter. The curve separates the three: each
verify round's context position, commit length and step time, binned by context
position, with rolling means and the share of repeated n-grams in the tokens committed
in each window, so a loop is marked on the curve instead of read as good acceptance.

`round_curve` is the one function the CLI's `prompt --json` and the TUI's chart call;
it is pure (no engine, no I/O), on the `[context, step_s, commit]` triples a
`RequestSample.rounds` holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# A window whose committed tokens are mostly n-grams seen earlier in the output is a loop.
# Ordinary code repeats short idioms (`self.`, `return`), which 8-grams mostly do not
# catch; a loop repeats whole lines, which they all do.
LOOP_SHARE = 0.5
NGRAM = 8
TARGET_WINDOWS = 16  # about this many windows along one request when no bin is given
MIN_BIN_TOKENS = 8


@dataclass(frozen=True)
class CurveRound:
    """One verify round: where it started, what it committed, how long it took."""

    context: int  # tokens in the KV cache when the round started
    commit: float  # tokens this round committed (bonus included)
    step_s: float  # wall time of the round (draft + verify + commit)
    repeated: float | None  # share of its committed tokens that close a repeated n-gram

    def as_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "commit": self.commit,
            "step_ms": self.step_s * 1000.0,
            "repeated": self.repeated,
        }


@dataclass(frozen=True)
class CurveWindow:
    """The rounds that started in [context_start, context_end), pooled.

    Pooled, not averaged per round: `commit` is the window's tokens / its rounds and
    `step_s` its time / its rounds, so `commit / step_s` is exactly the window's decode
    rate. The rolling figures pool this window with the `smooth - 1` before it."""

    context_start: int
    context_end: int
    rounds: int
    tokens: float
    time_s: float
    commit: float
    step_s: float
    tok_s: float
    commit_rolling: float
    step_rolling_s: float
    repeated: float | None  # share of this window's committed tokens in a repeated n-gram
    looping: bool

    @property
    def context(self) -> float:
        """The window's middle: where a chart puts its point."""
        return (self.context_start + self.context_end) / 2

    def as_dict(self) -> dict[str, Any]:
        return {
            "context_start": self.context_start,
            "context_end": self.context_end,
            "context": self.context,
            "rounds": self.rounds,
            "tokens": self.tokens,
            "commit": self.commit,
            "step_ms": self.step_s * 1000.0,
            "tok_s": self.tok_s,
            "commit_rolling": self.commit_rolling,
            "step_rolling_ms": self.step_rolling_s * 1000.0,
            "repeated": self.repeated,
            "looping": self.looping,
        }


@dataclass(frozen=True)
class RoundCurve:
    """A request's rounds and their windows along the context; what the TUI draws."""

    rounds: tuple[CurveRound, ...]
    windows: tuple[CurveWindow, ...]
    bin_tokens: int
    smooth: int
    ngram: int
    loop_share: float

    @property
    def looping_from(self) -> int | None:
        """The context position of the first looping window, or None."""
        return next((w.context_start for w in self.windows if w.looping), None)

    @property
    def first(self) -> CurveWindow | None:
        return self.windows[0] if self.windows else None

    @property
    def last(self) -> CurveWindow | None:
        return self.windows[-1] if self.windows else None

    def summary(self) -> str:
        """One line: first and last window's commit and step time, and any loop."""
        if not self.windows:
            return "per-round curve: no rounds reported"
        a, b = self.windows[0], self.windows[-1]
        text = (
            f"per-round curve ({len(self.rounds)} rounds, {len(self.windows)} windows of "
            f"{self.bin_tokens} tokens): commit {a.commit:.2f} -> {b.commit:.2f}, step "
            f"{a.step_s * 1000:.2f} -> {b.step_s * 1000:.2f} ms from context "
            f"{a.context_start} to {b.context_end}"
        )
        where = self.looping_from
        if where is not None:
            text += f"; output loops from context {where} (commit there is repetition)"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {
            "bin_tokens": self.bin_tokens,
            "smooth": self.smooth,
            "ngram": self.ngram,
            "loop_share": self.loop_share,
            "looping_from": self.looping_from,
            "rounds": [r.as_dict() for r in self.rounds],
            "windows": [w.as_dict() for w in self.windows],
        }


def repeated_ngram_marks(tokens: Sequence[Any], n: int = NGRAM) -> list[bool]:
    """For each token, whether the n-gram ending at it already occurred earlier.

    The same count as `prompts.repetition_share`, kept per position so any stretch of
    the output (a window, a round) can say how much of it repeats."""
    marks = [False] * len(tokens)
    seen: set[tuple] = set()
    for end in range(n - 1, len(tokens)):
        gram = tuple(tokens[end - n + 1 : end + 1])
        marks[end] = gram in seen
        seen.add(gram)
    return marks


def _share(marks: Sequence[bool]) -> float | None:
    return sum(marks) / len(marks) if marks else None


def round_curve(
    rounds: Sequence[Sequence[float]],
    output: Sequence[Any] | None = None,
    *,
    output_tokens: int | None = None,
    bin_tokens: int | None = None,
    smooth: int = 3,
    ngram: int = NGRAM,
    loop_share: float = LOOP_SHARE,
) -> RoundCurve:
    """Bin a request's verify rounds by context position.

    `rounds` are `[context, step_s, commit]` as `RequestSample.rounds` holds them, in
    order. `output` is the output's token ids (without them the loop marks are None);
    the first output token comes from the prefill, so round r's tokens are output
    positions `context_r - context_0 + 1` onwards. `output_tokens` (default: the length
    of `output`) caps the rounds' commits: the last round can commit past `max_tokens`,
    and the engine's record counts those tokens where the output does not, so with the
    cap the commits add up to the request's N - 1 decode tokens. `bin_tokens` is the
    window width in context tokens (default: the span split into about 16 windows).
    """
    if smooth < 1:
        raise ValueError("smooth must be at least 1")
    marks = repeated_ngram_marks(output, ngram) if output is not None else None
    base = int(rounds[0][0]) if rounds else 0
    if output_tokens is None and output is not None:
        output_tokens = len(output)
    parsed: list[CurveRound] = []
    for context, step_s, commit in rounds:
        if output_tokens is not None:
            commit = max(0.0, min(float(commit), output_tokens - 1 - (int(context) - base)))
        repeated = None
        if marks is not None:
            start = int(context) - base + 1
            repeated = _share(marks[start : start + int(commit)])
        parsed.append(CurveRound(int(context), float(commit), float(step_s), repeated))
    if not parsed:
        return RoundCurve((), (), bin_tokens or 0, smooth, ngram, loop_share)
    span = parsed[-1].context + int(parsed[-1].commit) - base
    width = bin_tokens or max(MIN_BIN_TOKENS, math.ceil(span / TARGET_WINDOWS))
    groups: dict[int, list[CurveRound]] = {}
    for r in parsed:
        groups.setdefault((r.context - base) // width, []).append(r)
    windows: list[CurveWindow] = []
    pooled: list[tuple[int, float, float]] = []  # (rounds, tokens, time) per window
    for index in sorted(groups):
        members = groups[index]
        tokens = sum(r.commit for r in members)
        time_s = sum(r.step_s for r in members)
        pooled.append((len(members), tokens, time_s))
        recent = pooled[-smooth:]
        n_recent = sum(p[0] for p in recent)
        start = base + index * width
        repeated = None
        if marks is not None:
            lo, hi = start - base + 1, start - base + 1 + width
            repeated = _share(marks[lo:hi])
        windows.append(
            CurveWindow(
                context_start=start,
                context_end=start + width,
                rounds=len(members),
                tokens=tokens,
                time_s=time_s,
                commit=tokens / len(members),
                step_s=time_s / len(members),
                tok_s=tokens / time_s if time_s > 0 else 0.0,
                commit_rolling=sum(p[1] for p in recent) / n_recent,
                step_rolling_s=sum(p[2] for p in recent) / n_recent,
                repeated=repeated,
                looping=repeated is not None and repeated >= loop_share,
            )
        )
    return RoundCurve(tuple(parsed), tuple(windows), width, smooth, ngram, loop_share)


def sample_curve(sample: Any, **kwargs: Any) -> RoundCurve | None:
    """The curve of a `RequestSample`, or None where its engine reports no rounds."""
    if not sample.rounds:
        return None
    # Token ids only: text cannot be lined up with rounds (a token is not a character).
    output = getattr(sample, "output_ids", None)
    kwargs.setdefault("output_tokens", sample.completion_tokens or None)
    return round_curve(sample.rounds, output, **kwargs)
