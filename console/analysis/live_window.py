"""Observed figures from the last minute of live data, and the verdict on them.

"Why is it 32 tok/s now?" is asked about what the engine is doing, not about a typed
number: `specconsole diagnose HOST` (reading the live samples `watch` stored) and the
TUI's sweeps screen (ctrl+l, reading the dashboard's series) both take the last
`window_s` seconds of live samples, summarise them here and explain them here, so the
same samples give the same observed figures, the same inferred text type and the same
verdict in both faces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.analysis import format as fmt
from console.analysis.decompose import ThroughputModel
from console.analysis.records import LiveSample
from console.analysis.stats import spread
from console.analysis.verdict import Judgement, Observed, Sweep, judge, typed_baseline

LIVE_WINDOW_S = 60.0


@dataclass(frozen=True)
class LiveWindow:
    """Medians over the window's samples that carry every figure (tok/s, commit, step
    time and context): a sample without its context cannot be placed on the model."""

    n: int
    sources: tuple[str, ...]  # live sources that contributed: log, metrics, request
    tok_s: float
    commit: float
    step_s: float
    context: float
    newest: float  # unix time of the newest sample used
    # (tok/s, commit) of each sample used: what the verdict's bootstrap resamples
    pairs: tuple[tuple[float, float], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The `live` object of `diagnose --json`."""
        return {
            "n": self.n,
            "sources": ",".join(self.sources),
            "tok_s": self.tok_s,
            "commit": self.commit,
            "step": self.step_s,
            "context": self.context,
        }

    def text(self, text_type: str) -> str:
        """One line saying what was observed, and the text type it resembles."""
        return (
            f"live series, last minute ({self.n} samples from {','.join(self.sources)}): "
            f"{fmt.tok_s(self.tok_s)} tok/s at context {self.context:.0f}, commit "
            f"{fmt.commit(self.commit)}, step {fmt.step_ms(self.step_s)} ms; "
            f"text resembles {text_type}"
        )


def has_figures(sample: LiveSample) -> bool:
    return bool(sample.tok_s and sample.commit_len and sample.step_time_s and sample.context_tokens)


def live_window(
    samples: Iterable[LiveSample], *, window_s: float = LIVE_WINDOW_S, now: float | None = None
) -> LiveWindow | None:
    """The observed figures of the `window_s` seconds up to `now` (both faces pass the
    clock, so "the last minute" is the same minute; without it, up to the newest usable
    sample). None when no sample in it has every figure (link samples and notes have
    none)."""
    usable = [s for s in samples if has_figures(s)]
    if not usable:
        return None
    end = max(s.t for s in usable) if now is None else now
    usable = [s for s in usable if s.t >= end - window_s]
    if not usable:
        return None
    newest = max(s.t for s in usable)

    def median(values: Iterable[float | None]) -> float:
        result = spread(values)
        return result.median if result else 0.0

    return LiveWindow(
        n=len(usable),
        sources=tuple(sorted({s.source for s in usable})),
        tok_s=median(s.tok_s for s in usable),
        commit=median(s.commit_len for s in usable),
        step_s=median(s.step_time_s for s in usable),
        context=median(float(s.context_tokens or 0) for s in usable),
        newest=newest,
        pairs=tuple((s.tok_s or 0.0, s.commit_len or 0.0) for s in usable),
    )


def closest_type(model: ThroughputModel, commit: float, context: float) -> str:
    """The swept text type whose commit length at `context` is nearest the observed one:
    commit depends on the text, so it says what the engine is being fed."""
    return min(model.commit, key=lambda k: abs(model.commit_at(k, context) - commit))


@dataclass(frozen=True)
class LiveVerdict:
    window: LiveWindow
    text_type: str  # as given, or inferred from the observed commit length ("?" if none fits)
    inferred: bool
    verdict: Judgement


def explain_live(
    sweep: Sweep,
    window: LiveWindow,
    *,
    text_type: str | None = None,
    context: float | None = None,
    baseline: float | None = None,
    baseline_context: float | None = None,
    baseline_text: str | None = None,
) -> LiveVerdict:
    """The verdict on the window's tok/s (`verdict.judge`), its interval from the window's
    own samples. Without `text_type` the text is inferred from the commit length, and an
    ambiguous one is said, never guessed; without `context` the window's median context
    is used."""
    at = window.context if context is None else context
    observed = Observed.from_live(
        window.pairs, tok_s=window.tok_s, commit=window.commit, step_s=window.step_s,
        context=at, text_type=text_type,
    )  # fmt: skip
    base = typed_baseline(sweep, baseline, baseline_context, baseline_text)
    judged = judge(sweep, observed, base)
    return LiveVerdict(window, judged.text_type or "?", text_type is None, judged)
