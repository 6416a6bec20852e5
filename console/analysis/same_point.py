"""Same context, same text: the verdict is the decomposition itself, no model needed.

When both sides read the same passages at the same context, context growth and text
cannot explain a gap: tok/s = commit / step, so what moved is one of the two factors,
each with its paired interval (`pairing.paired_figures`, drift included), each read by
the one reading every answer shares (`answer.answer`):
- commit moved by `MATTERS` (10%) or more, beyond noise: "not physics: acceptance changed
  (a flag, the drafter)";
- commit unmoved (exactly, under greedy decoding) and step time moved by 10% or more
  beyond noise and drift: "not physics: step time +27% at the same context and text (the
  host or the engine got slower)";
- neither: "physics: within noise" (or "no change that matters", naming a factor that
  moved by less than 10%), one of the verdict's three outcomes like the others, so every
  path scores the same way; but a tok/s change whose 95% interval reaches past ± `WIDE`
  (15%) cannot rule out a change that matters, and says "not enough evidence" as the
  model's verdict does (a 16% step-time regression read "physics: within noise (-16% ±
  22%)"). "Not physics" is read from the change's decision interval (99% over every row
  of the comparison, spent over its looks: `sequential`), built to keep false alarms
  out; "too wide" from its 95% interval, since a miss is the other question (at the
  decision level the farther end overstates what is left open: the parsers side by side
  read "too wide to tell" on 3 of 4 rows in a `bench verdict` run).
A baseline before and after a flag change reads the same sentence for each point, so the
check names the factor that is off. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from console.analysis.answer import answer
from console.analysis.pairing import PairedChange, PairedFigures
from console.analysis.thresholds import MATTERS

Outcome = str  # "physics" | "not physics" | "not enough evidence"


def _moved(figures: PairedFigures, name: str) -> PairedChange | None:
    moved = figures.figure(name).moved
    return moved if isinstance(moved, PairedChange) else None


@dataclass(frozen=True)
class SamePointVerdict:
    """The verdict on one point both sides measured at the same context and text."""

    outcome: Outcome
    headline: str
    factor: str | None  # "commit" | "step time" | None
    figures: PairedFigures
    label: str = ""

    def lines(self) -> list[str]:
        out = [self.headline]
        for title, name in (("tok/s", "decode_tok_s"), ("commit", "commit_len"),
                            ("step time", "step_time_s")):  # fmt: skip
            pair = self.figures.figure(name)
            out.append(f"  {title}: {pair.change_text()}")
        out.append(f"  {self.figures.passages} passage(s) paired, {self.figures.rounds} "
                   f"round(s) each; {self.figures.drift.text()}")  # fmt: skip
        if self.figures.unmatched:
            out.append(f"  {self.figures.unmatched} passage(s) read on one side only, left out")
        if self.factor == "step time" and self.figures.drift.order == "A-B":
            out.append("  each side is one block at its own time: a slow spell of the host "
                       "during one reads the same way; read both again to tell (`set "
                       "--baseline` does before it reports)")  # fmt: skip
        return out

    def text(self) -> str:
        return "\n".join(self.lines())

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "headline": self.headline,
            "factor": self.factor,
            "same_context_and_text": True,
            "paired": self.figures.passages > 0,  # by passage, as every protocol figure
            "changes": {n: p.change_dict() for n, p in self.figures.pairs.items()},
            **self.figures.as_dict(),
        }


def slower_or_faster(ratio: float) -> str:
    return "slower" if ratio > 1 else "faster"


def judge_same_point(figures: PairedFigures, label: str = "") -> SamePointVerdict:
    """The decomposition verdict on a point compared under the protocol."""
    commit, step = _moved(figures, "commit_len"), _moved(figures, "step_time_s")
    tok = _moved(figures, "decode_tok_s")
    if commit is None or step is None or tok is None:
        raise ValueError("judge_same_point needs figures compared by pairing.paired_figures")
    if _answer(commit) == "not physics":
        headline = (f"Not physics: acceptance changed (a flag, the drafter): commit "
                    f"{commit.text()} at the same context and text")  # fmt: skip
        return SamePointVerdict("not physics", headline, "commit", figures, label)
    if _answer(step) == "not physics":
        headline = (
            f"Not physics: step time {step.text()} at the same context and text "
            f"(the host or the engine got {slower_or_faster(step.ratio.value)})"
        )
        return SamePointVerdict("not physics", headline, "step time", figures, label)
    if not (commit.has_interval and step.has_interval):
        headline = (f"Not enough evidence: tok/s {tok.text()} rests on too few rounds to "
                    "resample; measure more rounds of the same passages")  # fmt: skip
        return SamePointVerdict("not enough evidence", headline, None, figures, label)
    if _answer(tok) == "not enough evidence":
        # Rounds narrow the timing part only; a drift term that is most of the width
        # is narrowed by reading both sides in one comparison, not by more of the same.
        drift = math.expm1(tok.drift_rel)
        narrow = ("more rounds of the same passages narrow it" if tok.drift_rel <= tok.timing_rel
                  else f"most of it is the host's drift between blocks (± {drift:.0%}), which "
                  "more rounds do not narrow: measure both sides side by side or bracketed "
                  "(`set --baseline`)")  # fmt: skip
        headline = (f"Not enough evidence: tok/s {tok.text()} at the same context and text is "
                    f"too wide to tell physics from a change that matters; {narrow}")  # fmt: skip
        return SamePointVerdict("not enough evidence", headline, None, figures, label)
    small = _small(figures)
    if small:
        headline = (f"Physics: no change that matters at the same context and text: tok/s "
                    f"{tok.text()}; {small}")  # fmt: skip
        return SamePointVerdict("physics", headline, None, figures, label)
    headline = (f"Physics: within noise at the same context and text: tok/s {tok.text()}, "
                "neither commit nor step time moved")  # fmt: skip
    return SamePointVerdict("physics", headline, None, figures, label)


def _answer(change: PairedChange) -> str:
    """The one reading of a change (`answer`): its decision interval, and its 95% one
    for whether it is too wide; too few pairs to resample have no interval to read."""
    if not change.has_interval:
        return "not enough evidence"
    return answer(change.ratio, change.shown)


def _small(figures: PairedFigures) -> str:
    """The factors that moved beyond noise by less than `MATTERS`, said as such; "" when
    none did."""
    moved = [f"{title} {c.text()}" for title, name in (("commit", "commit_len"),
                                                       ("step time", "step_time_s"))
             if (c := _moved(figures, name)) is not None and c.finding]  # fmt: skip
    if not moved:
        return ""
    return f"{' and '.join(moved)} moved, by less than the {MATTERS:.0%} worth a bug hunt"


def factor_sentence(verdict: SamePointVerdict) -> str:
    """What a baseline row says moved: the factor that is off, with its interval."""
    if verdict.factor == "commit":
        return f"commit {_moved(verdict.figures, 'commit_len').text()} (acceptance changed)"
    if verdict.factor == "step time":
        step = _moved(verdict.figures, "step_time_s")
        return (
            f"step time {step.text()} (the host or the engine got "
            f"{slower_or_faster(step.ratio.value)})"
        )
    if verdict.outcome == "not enough evidence":
        tok = _moved(verdict.figures, "decode_tok_s")
        small = _small(verdict.figures)  # a factor that did move is named still
        if tok is not None and tok.has_interval and _answer(tok) == "not enough evidence":
            wide = f"too wide to tell (tok/s ± {tok.ratio.rel_half_width:.0%})"
            return f"{wide}; {small}" if small else wide
        return f"too few rounds to tell; {small}" if small else "too few rounds to tell"
    return _small(verdict.figures) or "neither factor moved beyond noise"
