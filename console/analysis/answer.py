"""The one reading of a change's interval: "not physics", "physics" or "not enough evidence".

Every answer the console gives on a change (the model's verdict on its residual, a
same-point row of a baseline, the table read as a whole) reads it here, from two
intervals of the same change and the product's thresholds (`thresholds.MATTERS`, `WIDE`):

- **not physics** when the *decision* interval excludes no change and the change is at
  least `MATTERS` (10%): a real change too small to be worth a bug hunt is not one;
- **not enough evidence** ("too wide") otherwise, when the *shown* interval reaches past
  ± `WIDE` (15%) at its farther end: it cannot rule out a change that matters;
- **physics** ("within noise", or no change that matters) otherwise.

The two intervals answer two questions with different errors. The decision interval
guards against a false "not physics", so it is built at the level the comparison spends
(99% over its rows together, spent over its looks where it reads on: `sequential`); the
shown interval (95%) asks whether a change that matters is ruled out, a miss rather than
a false alarm, so a stricter early look (which only widens the decision interval) does
not turn a calm comparison into "too wide". Where one interval serves both (the model's
residual) they are the same.
"""

from __future__ import annotations

import math
from typing import Literal

from console.analysis.intervals import Interval
from console.analysis.thresholds import MATTERS, WIDE

Outcome = Literal["physics", "not physics", "not enough evidence"]


def far(ratio: float, limit: float) -> bool:
    """Whether a ratio is more than `limit` off no change (on the log scale, either way)."""
    return abs(math.log(max(ratio, 1e-9))) > math.log(1 + limit)


def farther_end(ratio: Interval) -> float:
    """The end of a ratio's interval farther from no change: the biggest change it
    cannot rule out."""
    return max((ratio.low, ratio.high), key=lambda x: abs(math.log(max(x, 1e-9))))


def reaches_past_wide(ratio: Interval) -> bool:
    """Whether the interval cannot rule out a change past ± `WIDE`: too wide to call
    physics. The end, not the half-width, decides: -12% ± 12% holds no change, yet
    reaches about -23%, and a typed tree-budget change of -12% was called physics on it.
    Read as the operator reads a change, in percent: [-15%, +15%] is within."""
    return ratio.low < 1 - WIDE or ratio.high > 1 + WIDE


def changed(decision: Interval, matters: float = MATTERS) -> bool:
    """A change that is real at the decision interval's level and big enough to matter."""
    return not decision.contains(1.0) and far(decision.value, matters)


def answer(decision: Interval, shown: Interval | None = None) -> Outcome:
    """The answer on one change (see the module docstring); `shown` defaults to
    `decision` (one interval for both questions)."""
    if changed(decision):
        return "not physics"
    if reaches_past_wide(shown if shown is not None else decision):
        return "not enough evidence"
    return "physics"
