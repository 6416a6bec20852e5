"""Observed figures from the last minute of live data, and the verdict on them.

A minute of live data can hold several kinds of traffic: a short prompt of code, then a
long one of prose. Their medians together describe a point no request ran at (observed
668.8 at ctx 1014 between requests at 300 and 1700), so the window is split first, by
context (samples sorted by context, split where the next is more than `SPLIT` further
on: a request whose context grows through the decode stays one group) and then by commit
length (the text: split the same way), and the figures are those of the group the newest
sample belongs to; the other groups are named beside it, never averaged in.

"Why is it 32 tok/s now?" is asked about what the engine is doing, not about a typed
number: `specconsole diagnose HOST` (reading the live samples `watch` stored) and the
TUI's sweeps screen (ctrl+l, reading the dashboard's series) both take the last
`window_s` seconds of live samples, summarise them here and explain them here, so the
same samples give the same observed figures, the same inferred text type and the same
verdict in both faces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from console.analysis import format as fmt
from console.analysis.decompose import ThroughputModel
from console.analysis.records import LiveSample
from console.analysis.stats import spread
from console.analysis.thresholds import BATCHED
from console.analysis.verdict import Judgement, Observed, Sweep, judge, typed_baseline

LIVE_WINDOW_S = 60.0
SPLIT = 0.25  # a gap of 25% in context (or commit) between sorted samples starts a group


@dataclass(frozen=True)
class LiveGroup:
    """Another group of samples in the same window: what it was, in one line."""

    n: int
    context: float
    tok_s: float
    commit: float

    def text(self) -> str:
        return (f"{self.n} at context {self.context:.0f} ({fmt.tok_s(self.tok_s)} tok/s, "
                f"commit {fmt.commit(self.commit)})")  # fmt: skip


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
    others: tuple[LiveGroup, ...] = ()  # the window's other contexts and texts, kept apart
    # requests a round (the median; None: the engine does not say): tok/s above is then
    # one stream's (commit / step), and the verdict refuses to read it against a sweep
    batch: float | None = None

    @property
    def batched(self) -> bool:
        return self.batch is not None and self.batch >= BATCHED

    def as_dict(self) -> dict[str, Any]:
        """The `live` object of `diagnose --json`."""
        return {
            "n": self.n,
            "sources": ",".join(self.sources),
            "tok_s": self.tok_s,
            "commit": self.commit,
            "step": self.step_s,
            "context": self.context,
            "context_meaning": "mid-decode (the engine's KV tokens while it decodes)",
            "batch": self.batch,
            "others": [dataclasses.asdict(g) for g in self.others],
        }

    def text(self, text_type: str) -> str:
        """One line saying what was observed, and the text type it resembles."""
        line = (
            f"live series, last minute ({self.n} samples from {','.join(self.sources)}): "
            f"{fmt.tok_s(self.tok_s)} tok/s at mid-decode context {self.context:.0f}, commit "
            f"{fmt.commit(self.commit)}, step {fmt.step_ms(self.step_s)} ms; "
            f"text resembles {text_type}"
        )
        if self.others:
            line += ("; not averaged in (other contexts or texts): "
                     + ", ".join(g.text() for g in self.others))  # fmt: skip
        return line


def has_figures(sample: LiveSample) -> bool:
    return bool(sample.tok_s and sample.commit_len and sample.step_time_s and sample.context_tokens)


def _split(samples: list[LiveSample], key: Callable[[LiveSample], float]) -> list[list[LiveSample]]:
    """Sorted by `key`, a new group wherever the next value is more than `SPLIT` on."""
    groups: list[list[LiveSample]] = []
    for s in sorted(samples, key=key):
        if groups and key(s) <= key(groups[-1][-1]) * (1 + SPLIT):
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups


def groups_of(samples: list[LiveSample]) -> list[list[LiveSample]]:
    """The window's samples by batch (alone, or how many requests a round), then by
    context, then by commit length (the text): a minute alone and a minute under a batch
    of 4 are two kinds of traffic, never one median."""
    return [g for by_batch in _split(samples, lambda s: s.batch or 1.0)
            for by_ctx in _split(by_batch, lambda s: float(s.context_tokens or 0))
            for g in _split(by_ctx, lambda s: float(s.commit_len or 0))]  # fmt: skip


def _median(values: Iterable[float | None]) -> float:
    result = spread(values)
    return result.median if result else 0.0


def live_window(
    samples: Iterable[LiveSample], *, window_s: float = LIVE_WINDOW_S, now: float | None = None
) -> LiveWindow | None:
    """The observed figures of the `window_s` seconds up to `now` (both faces pass the
    clock, so "the last minute" is the same minute; without it, up to the newest usable
    sample): those of the context-and-text group of the newest sample, the others named
    beside them. None when no sample in it has every figure (link samples and notes have
    none)."""
    usable = [s for s in samples if has_figures(s)]
    if not usable:
        return None
    end = max(s.t for s in usable) if now is None else now
    usable = [s for s in usable if s.t >= end - window_s]
    if not usable:
        return None
    groups = sorted(groups_of(usable), key=lambda g: -max(s.t for s in g))
    chosen = groups[0]
    others = tuple(
        LiveGroup(len(g), _median(float(s.context_tokens or 0) for s in g),
                  _median(s.per_stream_tok_s for s in g), _median(s.commit_len for s in g))
        for g in groups[1:]
    )  # fmt: skip
    batches = [s.batch for s in chosen if s.batch is not None]
    return LiveWindow(
        n=len(chosen),
        sources=tuple(sorted({s.source for s in chosen})),
        # one stream's rate: what the model of one request predicts (under a batch, the
        # aggregate is this times the batch)
        tok_s=_median(s.per_stream_tok_s for s in chosen),
        commit=_median(s.commit_len for s in chosen),
        step_s=_median(s.step_time_s for s in chosen),
        context=_median(float(s.context_tokens or 0) for s in chosen),
        newest=max(s.t for s in chosen),
        pairs=tuple((s.per_stream_tok_s or 0.0, s.commit_len or 0.0) for s in chosen),
        others=others,
        batch=_median(batches) if batches else None,
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
    baseline_figure: Observed | None = None,
) -> LiveVerdict:
    """The verdict on the window's tok/s (`verdict.judge`), its interval from the window's
    own samples. Without `text_type` the text is inferred from the commit length, and an
    ambiguous one is said, never guessed; without `context` the window's own context (the
    engine's KV tokens while it decodes: a mid-decode context) is used, and a `context`
    the operator types is a prompt length, read with the sweep's output like any other.
    `baseline_figure`: the baseline already built (`diagnose` passes its typed one)."""
    observed = Observed.from_live(
        window.pairs, tok_s=window.tok_s, commit=window.commit, step_s=window.step_s,
        context=window.context, text_type=text_type,
    )  # fmt: skip
    if context is not None:
        observed = replace(observed, prompt=context, context=context)
    base = baseline_figure or typed_baseline(sweep, baseline, baseline_context, baseline_text)
    judged = judge(sweep, observed, base)
    if window.batched:
        judged = under_load(judged, window.batch or 1.0)
    return LiveVerdict(window, judged.text_type or "?", text_type is None, judged)


def under_load(judged: Judgement, batch: float) -> Judgement:
    """A window of batched rounds read against a sweep of requests alone: a batch's
    round costs more than one request's, so the step residual would be the load, not a
    bug or the text. Not enough evidence, saying so and what measures the load."""
    reason = (f"the live rounds ran {batch:.1f} requests at a time and the sweep one: a "
              "batch's step is dearer by physics, so the model cannot judge them; "
              "`specconsole load` measures speculation at each concurrency")  # fmt: skip
    return replace(judged, outcome="not enough evidence",
                   headline=f"Not enough evidence: {reason}.",
                   reasons=(reason, *judged.reasons), offer=None, settle=None)  # fmt: skip
