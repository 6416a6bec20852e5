"""One baseline block: the points a baseline measures, and one reading of them.

`BaselinePlan` is what both sides of a change measure (prompt lengths, output length, text
types, repeats), fixed before the change from the host profile's `[baseline]` and the
engine's context length; `run_baseline` reads it once, in whole rounds of every passage
(stored as kind "baseline"); `rounds_by_point` says how many rounds a block took, so the
next block of a comparison reads exactly as many. `experiments.baseline` puts blocks in an
order around a change; `experiments.baseline_confirm` reads more when a finding needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from console.analysis.records import RequestSample
from console.analysis.sample_size import SampleTarget
from console.config import BaselineProfile
from console.measure import methods
from console.measure.methods import MethodResult
from console.measure.session import MeasureError, MeasureSession

# The defaults a host profile's `[baseline]` table overrides (console/config.py): a short
# context, and a long one at `long_fraction` of the engine's context length, since a change
# that matters at long context (a draft window, a context length) cannot show at 256.
BASELINE = {"context": 256, "max_tokens": 96, "text_types": ("code", "prose"), "repeat": 3,
            "long_fraction": 0.9}  # fmt: skip


@dataclass(frozen=True)
class BaselinePlan:
    """The points a baseline measures: prompt lengths, output length, text types, repeats."""

    contexts: tuple[int, ...]
    output: int
    text_types: tuple[str, ...]
    repeat: int
    notes: tuple[str, ...] = ()  # what was clamped to fit the engine

    def as_dict(self) -> dict[str, Any]:
        return {"contexts": list(self.contexts), "output": self.output,
                "text_types": list(self.text_types), "repeat": self.repeat}  # fmt: skip


def default_contexts(context_limit: int | None, output: int) -> list[int]:
    """256 and ~90% of the context length (rounded down to 64), or 256 alone when the
    engine does not say its context length."""
    short = int(BASELINE["context"])
    if context_limit is None:
        return [short]
    long = int(context_limit * float(BASELINE["long_fraction"])) // 64 * 64
    return sorted({short, long})


def baseline_plan(
    profile: BaselineProfile | None,
    context_limit: int | None,
    *,
    contexts: Sequence[int] | None = None,
    output: int | None = None,
    text_types: Sequence[str] | None = None,
) -> BaselinePlan:
    """The profile's baseline with this run's overrides, every context clamped so that it
    and the output fit the engine's context length (said in `notes`)."""
    profile = profile or BaselineProfile()
    out = output or profile.output
    wanted = list(contexts or profile.contexts or default_contexts(context_limit, out))
    notes = []
    if context_limit is not None:
        room = context_limit - out
        if room < 1:
            raise MeasureError(
                f"A baseline output of {out} tokens leaves no room for a prompt in the "
                f"engine's context length {context_limit}; use a smaller --baseline-output."
            )
        for c in [c for c in wanted if c > room]:
            notes.append(f"context {c} clamped to {room} ({out} output tokens must fit "
                         f"in {context_limit})")  # fmt: skip
        wanted = [min(c, room) for c in wanted]
    return BaselinePlan(
        contexts=tuple(sorted(set(wanted))),
        output=out,
        text_types=tuple(text_types or profile.text_types),
        repeat=profile.repeat,
        notes=tuple(notes),
    )


async def plan_for(session: MeasureSession, **overrides: Any) -> BaselinePlan:
    """The baseline plan for this session's host profile and engine, with overrides."""
    facts = await session.facts()
    return baseline_plan(session.service.profile.baseline, facts.context_limit, **overrides)


async def run_baseline(
    session: MeasureSession,
    plan: BaselinePlan | None = None,
    *,
    target: SampleTarget | None = None,
    prior: Sequence[RequestSample] = (),
    first_index: int = 0,
    min_rounds: int | None = None,
    max_rounds: int | None = None,
    rounds: dict[tuple[str, int], int] | None = None,
) -> MethodResult:
    """The baseline's points (`plan`, else the profile's), the same before and after a
    change; with `target`, repeated until each point's tok/s interval is narrow enough
    (see `context_sweep`). Stored as kind "baseline", so it is never taken for the sweep
    a verdict's model is fitted from."""
    plan = plan or await plan_for(session)
    with session.labelled("baseline"):
        return await methods.context_sweep(
            session,
            contexts=list(plan.contexts),
            output_tokens=plan.output,
            text_types=list(plan.text_types),
            repeat=plan.repeat,
            target=target,
            prior=prior,
            first_index=first_index,
            min_rounds=min_rounds,
            max_rounds=max_rounds,
            rounds=rounds,
        )


def rounds_by_point(result: MethodResult) -> dict[tuple[str, int], int]:
    """The whole rounds each point of this block took."""
    points = (result.figures.get("sample_size") or {}).get("points") or []
    return {(p["text_type"], int(p["context"])): int(p["rounds"]) for p in points}


def noise_notes(**blocks: MethodResult | None) -> list[str]:
    """The sample-size sentence of each block that did not reach the target, by side."""
    notes = []
    for side, r in blocks.items():
        message = r and (r.figures.get("sample_size") or {}).get("message")
        if message:
            notes.append(f"{side.replace('_', ' ')}: {message}")
    return notes
