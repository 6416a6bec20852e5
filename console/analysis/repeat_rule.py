"""The repeat rule a measurement's options ask for, read once for the CLI and the TUI.

`specconsole sweep` and `set --baseline` take `--repeat`, `--target-rel` and
`--max-repeat`; the TUI's sweep form and the Flags view's baseline settings take the same
three as fields. Both faces call `repeat_rule`, so the same values give the same
`SampleTarget`: a target repeats each point until its tok/s interval is that narrow (at
least the repeat, at most the ceiling); an explicit repeat alone, or a target of 0, is
exactly that many; neither is the default target (± 5%, 3 to 10 repeats; side by side up
to 40 while the paired change is wide).
"""

from __future__ import annotations

from dataclasses import replace

from console.analysis.sample_size import MAX_REPEAT, PAIRED_MAX_REPEAT, TARGET_REL, SampleTarget
from console.errors import ConsoleError

# A sweep the verdict's model is fitted from reads this many distinct passages a point:
# the model carries the spread between passages of a text (`passage_spread`), and two
# passages give it one degree of freedom a point. A comparison (`set --baseline`) keeps
# the sample size's two: the same passages on both sides cancel the spread.
MODEL_PASSAGES = 6


def repeat_rule(
    repeat: int | None,
    target_rel: float | None,
    max_repeat: int | None = None,
    *,
    default_min: int = 3,
) -> SampleTarget:
    """The `SampleTarget` for these options (None: not given); a ConsoleError with one
    sentence for values that cannot make one. A ceiling given is the ceiling side by side
    too; none given is 10, and side by side (where more pairs narrow the change itself)
    `PAIRED_MAX_REPEAT`."""
    least = repeat if repeat is not None else default_min
    if least < 1:
        raise ConsoleError(f"--repeat must be at least 1, not {least}.")
    if target_rel == 0 or (target_rel is None and repeat is not None):
        return SampleTarget.fixed(least)
    try:
        return SampleTarget(
            target_rel=TARGET_REL if target_rel is None else target_rel,
            max_repeat=max(MAX_REPEAT if max_repeat is None else max_repeat, least),
            min_repeat=least,
            paired_max_repeat=PAIRED_MAX_REPEAT if max_repeat is None else max(max_repeat, least),
        )
    except ValueError as exc:
        raise ConsoleError(str(exc)) from None


def model_sweep_rule(
    repeat: int | None, target_rel: float | None, max_repeat: int | None = None
) -> SampleTarget:
    """`repeat_rule` for a context sweep the verdict's model is fitted from: the default
    target reads `MODEL_PASSAGES` passages a point (a fixed repeat reads a fresh passage
    every time already). A ceiling below that is kept: `--max-repeat 4` reads 4 passages
    of one request each, and the passage term carries the fewer degrees of freedom."""
    rule = repeat_rule(repeat, target_rel, max_repeat)
    if rule.passages is None:
        return rule
    wanted = min(MODEL_PASSAGES, rule.max_repeat)
    return replace(rule, passages=max(rule.passages, wanted))


def parse_fraction(text: str, what: str) -> float | None:
    """A typed target: "5%" or "0.05" (as --target-rel takes it); blank is None."""
    raw = text.strip()
    if not raw:
        return None
    percent = raw.endswith("%")
    try:
        value = float(raw.removesuffix("%").strip())
    except ValueError:
        raise ConsoleError(f"{what} must be a fraction like 0.05 or 5%, not {text!r}.") from None
    value = value / 100 if percent else value
    if not 0 <= value < 1:
        raise ConsoleError(f"{what} must be between 0 and 1 (or 0% and 100%), not {text!r}.")
    return value
