"""Whether a sweep's step-time line falls with context beyond the sweep's own noise.

Attention over a growing KV cache cannot get cheaper, so a step line that falls measured
something else (a busy host, warm-up): the verdict refuses to explain anything with it.
"""

from __future__ import annotations

import random

from console.analysis.decompose import FitError, ThroughputModel, fit
from console.analysis.thresholds import FALL
from console.analysis.verdict_records import Sweep
from console.analysis.verdict_split import interval as _interval

FALL_RESAMPLES = 200  # refits that tell a fall from the sweep's own noise


def _falls_by(model: ThroughputModel) -> dict[str, float]:
    """Each step line's change from the lowest swept context to the highest."""
    lo, hi = model.contexts
    lines = {"all texts": model.step, **model.step_by_type}
    return {name: line.at(hi) / line.at(lo) - 1 for name, line in lines.items()
            if line.at(lo) > 0}  # fmt: skip


def falling_step_line(model: ThroughputModel, sweep: Sweep, seed: int) -> str | None:
    """A step line that falls by more than `FALL` across the swept contexts, and falls on
    every refit of the sweep's own resampled requests but a 2.5% tail: attention over
    a growing KV cache cannot get cheaper, so the sweep measured something else (a busy
    host, warm-up). A line whose fall lies within the sweep's own noise (one slow request
    at the low context of a cheap model) is flat as far as the sweep can tell; the
    verdict's intervals, drawn from the same requests, carry that noise."""
    bad = {name: fall for name, fall in _falls_by(model).items() if fall < -FALL}
    if not bad:
        return None
    rng = random.Random(seed)
    groups = sweep.groups()
    refits: dict[str, list[float]] = {name: [] for name in bad}
    for _ in range(FALL_RESAMPLES):
        drawn = [s for g in groups for s in rng.choices(g, k=len(g))]
        try:
            falls = _falls_by(fit(drawn))
        except (FitError, ZeroDivisionError):
            continue
        for name in bad:
            if name in falls:
                refits[name].append(falls[name])
    bad = {name: fall for name, fall in bad.items()
           if refits[name] and _interval(fall, refits[name]).high < 0}  # fmt: skip
    if not bad:
        return None
    lo, hi = model.contexts
    worst = min(bad.values())
    return (f"step time falls with context ({worst:.0%} from {lo:.0f} to {hi:.0f} on "
            f"{', '.join(bad)}, beyond the sweep's own noise): noise, another process or "
            "warm-up, not a finding")  # fmt: skip
