"""The measurement that settles a typed verdict the passage term left open.

Typed figures are the operator's own traffic: passages the sweep never read, so each
carries the spread between passages of its text (`passage_spread`), often wide enough
that no verdict can be told. The field reports' own method settles it: measure both
points on the same passages (one text at both contexts, both texts at one context), so
the context and text factors are paired by passage and the residual is narrow. The plan
names those points; `experiments/settle.py` runs it (`specconsole diagnose ... --settle`,
the TUI's settle key) and judges the measured points, then reads each typed figure
against what the engine measured at its point.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the records import this module: no cycle at run time
    from console.analysis.verdict_records import Observed

PASSAGES = 6  # distinct passages a settling point reads (each `READS` times)
READS = 2  # twice each: the paired interval resamples timing within each passage
MIN_PROMPT = 8


@dataclass(frozen=True)
class TypedFigure:
    """One typed figure as the operator gave it (prompt length, output, text)."""

    tok_s: float
    prompt: int
    text_type: str
    output: int
    requests: int = 1

    @property
    def point(self) -> tuple[int, str, int]:
        """Where it was read: two figures at one point can only be the same passages."""
        return (self.prompt, self.text_type, self.output)

    def as_dict(self) -> dict[str, Any]:
        return {"tok_s": self.tok_s, "prompt": self.prompt, "text_type": self.text_type,
                "output": self.output, "requests": self.requests}  # fmt: skip


def _typed(figure: Observed | None, default_kind: str | None) -> TypedFigure | None:
    if figure is None or not figure.is_typed or figure.prompt is None:
        return None
    kind = figure.text_type or default_kind
    if kind is None or figure.output is None:
        return None
    return TypedFigure(figure.tok_s, round(figure.prompt), kind, int(figure.output),
                       figure.typed_requests)  # fmt: skip


@dataclass(frozen=True)
class SettlePlan:
    """Both typed points (and one between them, so the step line is checked, not drawn
    through two points) on `passages` passages of every type asked about, read `reads`
    times each, at the observed figure's output."""

    host: str
    observed: TypedFigure
    baseline: TypedFigure | None
    passages: int = PASSAGES
    reads: int = READS

    @classmethod
    def for_figures(
        cls, host: str, observed: Observed, baseline: Observed | None, limit: int | None
    ) -> SettlePlan | None:
        """The plan for typed figures; None when either is not typed (nothing to settle
        by measuring: a stored run is already a measurement), or when both are at one
        point: what changed between them is in the past, and reading the point twice now
        can only measure today's engine against itself."""
        obs = _typed(observed, None)
        if obs is None:
            return None
        base = _typed(baseline, obs.text_type) if baseline is not None else None
        if baseline is not None and base is None:
            return None
        if base is not None and base.point == obs.point:
            return None
        for f in (obs, base):
            if f is not None and limit is not None and f.prompt + obs.output > limit:
                return None
        return cls(host, obs, base)

    @property
    def output(self) -> int:
        return self.observed.output

    @property
    def prompts(self) -> tuple[int, ...]:
        ends = {self.observed.prompt}
        if self.baseline is not None:
            ends.add(self.baseline.prompt)
        lo, hi = min(ends), max(ends)
        if lo == hi:  # one point: a shorter one gives the step line its second context
            return (max(MIN_PROMPT, lo // 4), lo)
        return (lo, (lo + hi) // 2, hi)

    @property
    def text_types(self) -> tuple[str, ...]:
        kinds = {self.observed.text_type}
        if self.baseline is not None:
            kinds.add(self.baseline.text_type)
        return tuple(sorted(kinds))

    def requests(self) -> int:
        return len(self.prompts) * len(self.text_types) * self.passages * self.reads

    def command(self) -> str:
        """`specconsole diagnose ... --settle`, the typed figures as given."""
        o = self.observed
        argv = [
            "specconsole",
            "diagnose",
            self.host,
            "--observed",
            f"{o.tok_s:g}",
            "--context",
            str(o.prompt),
            "--text",
            o.text_type,
            "--output",
            str(o.output),
        ]
        if o.requests > 1:
            argv += ["--observed-requests", str(o.requests)]
        b = self.baseline
        if b is not None:
            argv += [
                "--baseline",
                f"{b.tok_s:g}",
                "--baseline-context",
                str(b.prompt),
                "--baseline-text",
                b.text_type,
                "--baseline-output",
                str(b.output),
            ]
            if b.requests > 1:
                argv += ["--baseline-requests", str(b.requests)]
        return shlex.join([*argv, "--settle"])

    def as_dict(self) -> dict[str, Any]:
        return {
            "command": self.command(),
            "observed": self.observed.as_dict(),
            "baseline": self.baseline.as_dict() if self.baseline else None,
            "prompts": list(self.prompts),
            "text_types": list(self.text_types),
            "output": self.output,
            "passages": self.passages,
            "reads": self.reads,
        }
