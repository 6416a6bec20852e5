"""How many repeats a point needs: until its tok/s interval is narrow enough, or a cap.

A fixed repeat count is either wasted on a quiet host or too few on a busy one (the same
2-core host gave per-request tok/s from 365 to 574 at one point). So a measurement takes
at least `min_repeat` requests per point (in whole rounds of its passages), then keeps
going, round by round, for the points whose
pooled tok/s interval is still wider than `target_rel` (relative half-width: 0.05 reads
"± 5%"), up to `max_repeat`. A point that did not get there is shown anyway, with its
wider interval, and one sentence says the host was too noisy for the target.

A point's requests cycle over `passages` windows of its text type (2 by default), so
each passage is read several times: greedy decoding commits the same tokens in the same
steps on a passage every time, and the interval, taken within passages
(`intervals.strata`), is timing noise the repeats can narrow. Fresh passages for every
repeat would add the passage-to-passage spread in commit (±15-30% on the bundled pair),
which no number of repeats narrows and which a before/after on the same passages cancels.

A round reads every passage of every unfinished point once, passage by passage with the
text types and contexts in turn, never all repeats of one point in a row, and a point is
only judged (stopped or continued) after a whole round: stopping mid-round would leave one
passage read more often than another, and the two sides of a comparison pooling their
passages in different proportions: drift on a shared machine (another job starting, a
thermal limit) then spreads over all points of the block instead of biasing one.

Reading on until narrow is a precision target, not a test: it stops on an interval's
width, which does not move with where the estimate lies (on the log scale a sample's
spread is independent of its mean, for normal timing noise), so it adds no false alarms
of its own; the comparison it feeds is judged once, at the end, at the whole of its
level (`thresholds.CHANGE_LEVEL`). A rule that reads on *because* of the estimate is a
look of a group-sequential test instead (`sequential`, `baseline_confirm`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.intervals import usable
from console.analysis.pairing import paired_figures, side_figures
from console.analysis.records import RequestSample
from console.analysis.thresholds import PAIRED_TIMING_TARGET, TARGET_REL

MAX_REPEAT = 10
# Side by side, drift cancels in every pair, so more pairs narrow the change itself (across
# a restart they narrow only the timing part, never the drift): a point whose paired change
# is still wide reads on to this ceiling. On this 2-core host 10 pairs left the paired
# tok/s timing part at 99% ± 17-23%, "too wide to tell" for a parser flag.
PAIRED_MAX_REPEAT = 40
PASSAGES = 2
# Two requests give a bootstrap interval of four possible resamples: too crude to stop
# on. Three is the least a point is judged narrow on.
MIN_FOR_INTERVAL = 3

Point = tuple[str, int]  # (text type, context tokens)


@dataclass(frozen=True)
class SampleTarget:
    """When to stop repeating: tok/s interval half-width over the value at most
    `target_rel`, after at least `min_repeat` and at most `max_repeat` rounds; a point's
    n-th request reads passage n mod `passages` (None: a new passage every time). Side by
    side, a point whose paired change is still wider than `PAIRED_TIMING_TARGET` reads on
    to `paired_max_repeat` (never below `max_repeat`)."""

    target_rel: float = TARGET_REL
    max_repeat: int = MAX_REPEAT
    min_repeat: int = MIN_FOR_INTERVAL
    passages: int | None = PASSAGES
    paired_max_repeat: int = PAIRED_MAX_REPEAT

    def __post_init__(self) -> None:
        if self.passages is not None and self.passages < 1:
            raise ValueError(f"A point needs at least one passage, not {self.passages}.")
        if self.target_rel < 0:
            raise ValueError(f"The target must be 0 or more, not {self.target_rel}.")
        if not 1 <= self.min_repeat <= self.max_repeat:
            raise ValueError(
                f"Repeats need 1 <= minimum <= maximum, not {self.min_repeat} and "
                f"{self.max_repeat}."
            )

    @classmethod
    def fixed(cls, repeat: int) -> SampleTarget:
        """Exactly `repeat` rounds, whatever the intervals say."""
        return cls(target_rel=0.0, max_repeat=repeat, min_repeat=repeat, passages=None)

    def passage(self, index: int) -> int:
        """The passage window the `index`-th request of a point reads."""
        return index % self.passages if self.passages else index

    @property
    def min_rounds(self) -> int:
        """The least whole rounds (every passage once per round) that give `min_repeat`."""
        return -(-self.min_repeat // (self.passages or 1))

    @property
    def max_rounds(self) -> int:
        return max(self.min_rounds, -(-self.max_repeat // (self.passages or 1)))

    @property
    def paired_max_rounds(self) -> int:
        """The rounds a side-by-side point may read while its paired change is wide: the
        paired ceiling's, for an adaptive target; else `max_rounds`."""
        if not self.adaptive:
            return self.max_rounds
        return max(self.max_rounds, -(-self.paired_max_repeat // (self.passages or 1)))

    @property
    def adaptive(self) -> bool:
        return self.target_rel > 0 and self.max_repeat > self.min_repeat

    def as_dict(self) -> dict[str, Any]:
        return {
            "target_rel": self.target_rel,
            "min_repeat": self.min_repeat,
            "max_repeat": self.max_repeat,
            "paired_max_repeat": self.paired_max_repeat,
            "passages": self.passages,
        }


def point_of(sample: RequestSample) -> Point:
    return sample.text_type, sample.context_tokens


def rel_half_width(samples: Sequence[RequestSample]) -> float | None:
    """The tok/s interval's relative half-width, balanced over passages and taken within
    them (`pairing.side_figures`); None without a usable request."""
    figures = side_figures(samples)
    return figures["decode_tok_s"].rel_half_width if figures else None


def narrow_enough(samples: Sequence[RequestSample], target: SampleTarget) -> bool:
    figures = side_figures(samples)
    n = len(usable(samples))
    if figures is None or n < min(MIN_FOR_INTERVAL, target.max_repeat):
        return False
    return figures["decode_tok_s"].rel_half_width <= target.target_rel


# Side by side, a point reads on until the timing part of its paired tok/s change is
# within this (log scale, at the rows' family level) as well: each side's own ± 5% comes
# after 3 rounds on a calm host, but a ratio over 6 pairs judged at 99%+ is ± 15-20% wide,
# which reads "too wide to tell" for a parser flag and misses a 15% regression.


def paired_narrow_enough(
    before: Sequence[RequestSample], after: Sequence[RequestSample], *, rows: int = 1
) -> bool:
    """Whether the paired tok/s change of one point (one of `rows` judged together) has
    a timing half-width within `PAIRED_TIMING_TARGET`."""
    figures = paired_figures(before, after, rows=rows)
    if figures is None:
        return False
    moved = figures.pairs["decode_tok_s"].moved
    return moved is not None and moved.has_interval and moved.timing_rel <= PAIRED_TIMING_TARGET


@dataclass
class SampleSize:
    """What the repeats came to: per point, the requests and the tok/s interval's
    relative half-width, and whether every point reached the target."""

    target: SampleTarget
    rounds: dict[Point, int] = field(default_factory=dict)
    rel: dict[Point, float | None] = field(default_factory=dict)

    @property
    def most_repeats(self) -> int:
        """The most requests any point read (whole rounds of its passages)."""
        return max(self.rounds.values(), default=0) * (self.target.passages or 1)

    @property
    def short(self) -> list[Point]:
        """The points that ended wider than the target (only judged when adaptive)."""
        if self.target.target_rel <= 0:
            return []
        return [p for p, r in self.rel.items() if r is None or r > self.target.target_rel]

    @property
    def reached(self) -> bool:
        return not self.short

    def message(self) -> str | None:
        """One sentence when the host was too noisy for the target, else None."""
        short = self.short
        if not short:
            return None
        worst = max(short, key=lambda p: self.rel[p] or float("inf"))
        rel = self.rel[worst]
        at = "no usable request" if rel is None else f"± {rel:.1%}"
        return (
            f"This host is too noisy to reach ± {self.target.target_rel:.0%} on tok/s within "
            f"{self.target.max_repeat} repeats{self._read_on()}: {len(short)} of "
            f"{len(self.rel)} points stayed "
            f"wider (widest {worst[0]} at context {worst[1]}, {at}); their figures are shown "
            "with the wider interval (raise --max-repeat, or measure when the host is quieter)."
        )

    def _read_on(self) -> str:
        most = self.most_repeats
        if most <= self.target.max_repeat:
            return ""
        return f" (side by side up to {most}, while the paired change was wider than its target)"

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.target.as_dict(),
            "reached": self.reached,
            "message": self.message(),
            "points": [
                {
                    "text_type": p[0],
                    "context": p[1],
                    "rounds": self.rounds.get(p, 0),
                    "tok_s_rel_half_width": self.rel.get(p),
                }
                for p in self.rel
            ],
        }


async def measure_until_narrow(
    points: Sequence[Point],
    measure: Callable[[Point, int], Awaitable[RequestSample | None]],
    target: SampleTarget,
    *,
    prior: Sequence[RequestSample] = (),
    first_index: int = 0,
    min_rounds: int | None = None,
    max_rounds: int | None = None,
    rounds: dict[Point, int] | None = None,
) -> SampleSize:
    """Whole rounds over `points` (`measure(point, index)` takes one request; a round reads
    every passage of every open point once) until each point's tok/s interval, over
    `prior` and this block's own requests, is narrow enough. A point is judged only after
    a whole round, so it never stops with one passage read more often than another.

    `first_index` numbers the prompts (a point's n-th request reads passage
    `first_index + n`); `min_rounds` / `max_rounds` override the target's round counts
    for this block; `rounds` fixes each point's count (the after side of a comparison
    reads exactly what the before side read)."""
    low = target.min_rounds if min_rounds is None else min_rounds
    high = target.max_rounds if max_rounds is None else max_rounds
    if rounds is not None:
        high = max(rounds.values(), default=0)
    per_round = target.passages or 1
    mine: dict[Point, list[RequestSample]] = {p: [] for p in points}
    size = SampleSize(target)
    before = {p: [s for s in prior if point_of(s) == p] for p in points}
    open_points = [p for p in points if rounds is None or rounds.get(p, 0) > 0]
    done_rounds = 0
    while open_points and done_rounds < high:
        for j in range(per_round):
            for point in list(open_points):
                sample = await measure(point, first_index + done_rounds * per_round + j)
                if sample is not None:
                    mine[point].append(sample)
        done_rounds += 1
        for point in open_points:
            size.rounds[point] = size.rounds.get(point, 0) + 1
        if rounds is not None:
            open_points = [p for p in open_points if size.rounds[p] < rounds.get(p, 0)]
        elif done_rounds >= low and target.target_rel > 0:
            open_points = [p for p in open_points if not narrow_enough(before[p] + mine[p], target)]
    for point in points:
        size.rounds.setdefault(point, 0)
        size.rel[point] = rel_half_width(before[point] + mine[point])
    return size
