"""The verdict's decision: physics, not physics or not enough evidence, from the residual's
interval and what makes any answer a guess (`verdict.judge` gathers both).

The residual's 95% interval is read by the one reading every answer shares
(`answer.answer`: not physics at `MATTERS` with an interval that excludes no change, too
wide past ± `WIDE` at its farther end); what this adds is the model's: commit alone
(below), `BIG`, and which measurement the advice names (the widths of the host's drift
and of the passage term decide it).
"""

from __future__ import annotations

import math

from console.analysis.answer import Outcome, answer, changed, farther_end
from console.analysis.thresholds import MATTERS
from console.analysis.verdict_records import FactorRange

BIG = 3.0  # ...unless the factors explain a change this many times its half-width


def passage_led(residual: FactorRange, passages: float, drift: float = 0.0) -> bool:
    """Whether the passage term is most of the residual's width (and more than the drift):
    then the measurement that narrows the answer is reading both points on the same
    passages, whatever the answer is. A "not physics" that rests on it is the model's
    95% interval on held-out passages: about one in twenty nulls reads that way, so it is
    worth confirming before a bug hunt."""
    width = math.log1p(residual.ratio.rel_half_width)
    return passages > 0 and passages >= 0.5 * width and passages >= drift


def decide(
    hard: list[str],
    factors: tuple[FactorRange, ...],
    commit: FactorRange | None = None,
    drift: float = 0.0,
    passages: float = 0.0,
    settle: str = "",
) -> tuple[Outcome, list[str]]:
    """Not physics only when the residual's interval (of tok/s, or of commit length alone)
    excludes no change and the residual is big enough to matter; physics only when the
    interval rules out a residual past ± 15% (its farther end, not its half-width), or
    when the factors explain a change far bigger than that end (a typed 138 -> 32 is
    physics even where one request reads ± 20% here).
    `drift`: the 95% half-width (log) of the host's drift between the two figures; where
    it is most of the residual's width, the advice says so (more requests cannot narrow
    it; one comparison that reads both sides together can). `passages`: the same for the
    passage term of figures on the operator's own prompts; where it is most of the width,
    the advice is `settle`, how to read the figures on the same passages."""
    residual = factors[2]
    r = residual.ratio
    if hard:
        return "not enough evidence", hard
    if residual.zero_width:
        return "not enough evidence", [
            "the residual has no interval (nothing behind either figure to resample)"
        ]
    # "Not physics" is decided at the comparisons' 99% (`CHANGE_LEVEL`): at 95% one honest
    # typed pair in twenty whose draw lands past 10% reads as a bug (bench verdict: 2 of
    # 40 nulls on the operator's own prompts); "too wide" is read from the shown 95%.
    read = answer(residual.decision or r, r)
    if read == "not physics":
        return "not physics", []
    # Commit alone is a second reading of the same residual (tok/s can hide a commit
    # change behind a step time that moved the other way), so it asks for twice the
    # change before it overrides the residual: two chances at one threshold would be
    # two chances for a passage's commit to pass it.
    if commit is not None and changed(commit.ratio, 2 * MATTERS):
        return "not physics", []
    if read == "not enough evidence":
        end = farther_end(r)
        explained = sum(abs(math.log(f.ratio.value)) for f in factors[:2] if f.moved)
        if r.contains(1.0) and explained >= BIG * abs(math.log(end)):
            return "physics", []
        wide = (f"the residual, {residual.text()}, could be {end - 1:+.0%}: too wide to tell "
                "physics from a bug")  # fmt: skip
        if passage_led(residual, passages, drift):
            return "not enough evidence", [
                f"{wide}; most of it is how far passages of a text differ "
                f"(± {math.expm1(passages):.0%} between your prompts and the sweep's), "
                "which more requests do not narrow: measure both figures on the same "
                f"passages{f' ({settle})' if settle else ''}"
            ]
        if drift >= 0.5 * math.log1p(r.rel_half_width):
            return "not enough evidence", [
                f"{wide}; "
                f"most of it is the host's drift between two figures taken at different "
                f"times (± {math.expm1(drift):.0%}), which more requests do not narrow: "
                "measure both in one comparison (`set --baseline`), or calibrate again "
                "when the host is calmer"
            ]
        return "not enough evidence", [
            f"{wide}; more requests per point (repeat, --repeat) narrow it"
        ]
    return "physics", []
