"""What a verdict is about and what it says: the observed figure, the sweep behind the
model, one factor's range, and the judgement.

One meaning of "context" everywhere an operator types one (prompt, sweep, diagnose,
explain, the TUI): the prompt length in tokens. The model works in the mid-decode context
(prompt + half the output: attention cost follows the KV cache through the decode), so a
typed prompt length is converted here, with the figure's output length (the sweep's when
the operator does not give one), and every line the verdict prints says which of the two
it quotes. A live figure's context comes from the engine (tokens in the KV cache while it
decodes) and is already a mid-decode context.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from console.analysis.answer import Outcome, far
from console.analysis.decompose import FitError
from console.analysis.intervals import ChangeInterval, Interval, passage, pool, strata, usable
from console.analysis.noise_profile import Z95
from console.analysis.passage_spread import PassageSpread
from console.analysis.records import RequestSample
from console.analysis.settle_plan import SettlePlan
from console.analysis.thresholds import MATTERS
from console.analysis.typed_noise import FigureNoise, NoiseProfile

OUTCOMES: tuple[Outcome, ...] = ("physics", "not physics", "not enough evidence")
MIN_PROMPT = 8  # the shortest prompt a suggested sweep asks for
MIN_OUTPUT = 16  # and the shortest output


def beyond_limit(prompt: float, output: int, limit: int | None) -> str | None:
    """The one sentence refusing a figure whose prompt and output do not fit the engine's
    context length; None when it fits (or the limit is unknown)."""
    if limit is None or prompt + output <= limit:
        return None
    return (
        f"Prompt {prompt:.0f} + {output} output tokens is beyond this engine's context "
        f"length of {limit} tokens, so no sweep here can reach it; ask about a prompt of at "
        f"most {max(0, limit - output)} tokens, or an engine with a longer context length."
    )


@dataclass(frozen=True)
class Observed:
    """A tok/s figure to explain, where it was taken, and what it rests on.

    `requests` (a stored run) or `live` ((tok/s, commit) per live sample) are what the
    bootstrap resamples. A typed figure has neither: it carries `noise`, this host's
    per-request spread at its point (`typed_noise`), attached by the verdict, and
    `typed_requests`, how many requests it is the median of. `prompt` is the prompt
    length it was taken at where known, `output` its output length; `context` is always
    the mid-decode context the model reads."""

    tok_s: float
    context: float
    text_type: str | None = None  # None: infer it from `commit`
    commit: float | None = None
    step_s: float | None = None
    requests: tuple[RequestSample, ...] = ()
    live: tuple[tuple[float, float], ...] = ()
    source: str = "typed"
    prompt: float | None = None
    output: int | None = None
    noise: FigureNoise | None = None
    typed_requests: int = 1
    follows_sweep: bool = False  # its output is the sweep's (the operator gave none)
    # A measured figure compared with one measured at another time (`history explain` of
    # two runs at different points) carries its share of the host's block-to-block drift:
    # each draw is divided by a normal shift of this SD (log scale), as a typed figure's is.
    drift_sd: float = 0.0
    # A typed figure is the operator's own traffic unless they say otherwise: measured on
    # passages the sweep never read, so each draw also carries the passage effect
    # (`passage_spread`), attached by the verdict. False: read as the sweep's own prompts.
    held_out: bool = False
    passages: PassageSpread | None = None
    # Held out, but re-sent on the baseline's own prompts at the same point: the two
    # figures share their passages, so the passage term cancels between them (paired).
    same_prompts: bool = False
    # A typed figure read on the sweep's own passages, by window (`prompt --repeat N`
    # reads windows 0..N-1): the verdict judges it against the sweep's reads of those.
    windows: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return len(self.requests) or len(self.live)

    @property
    def drift_log_sd(self) -> float:
        """The SD (log scale) of the host's drift this figure's draws carry: its share of
        a shift between two blocks (`drift_sd`, or a typed figure's noise's)."""
        if self.drift_sd > 0:
            return self.drift_sd
        if self.noise is not None and self.noise.drift:
            return self.noise.drift / Z95 / math.sqrt(2.0)
        return 0.0

    def at_same_point(self, other: Observed) -> bool:
        """Typed at the same prompt, output and text as `other` (a text left out is the
        other's, as the verdict reads a baseline without one)."""
        kind = self.text_type or other.text_type
        return (self.prompt, self.output, kind) == (
            other.prompt, other.output, other.text_type or kind)  # fmt: skip

    @property
    def is_typed(self) -> bool:
        return self.n == 0

    @property
    def resolved(self) -> bool:
        """Its mid-decode context is known (a typed prompt needs an output length)."""
        return self.prompt is None or self.output is not None

    @classmethod
    def typed_at(
        cls,
        tok_s: float,
        prompt: float,
        text_type: str | None = None,
        *,
        output: int | None = None,
        requests: int = 1,
        held_out: bool = True,
        windows: Sequence[str] = (),
        same_prompts: bool = False,
    ) -> Observed:
        """A typed figure at a prompt length; without `output`, the sweep's (see
        `at_decode`); `held_out`: measured on the operator's own prompts (the default),
        not the sweep's passages; `windows`: which of the sweep's it read, where known;
        `same_prompts`: held out, on the same prompts as the figure it is compared with."""
        context = prompt + output / 2 if output is not None else prompt
        return cls(tok_s=tok_s, context=context, text_type=text_type, prompt=prompt,
                   output=output, typed_requests=max(1, requests),
                   held_out=held_out, windows=() if held_out else tuple(windows),
                   same_prompts=held_out and same_prompts)  # fmt: skip

    # The TUI's and older callers' name: `context` is the prompt length the operator typed.
    @classmethod
    def typed(cls, tok_s: float, context: float, text_type: str | None = None) -> Observed:
        return cls.typed_at(tok_s, context, text_type)

    @classmethod
    def from_requests(
        cls, samples: Sequence[RequestSample], text_type: str | None = None, source: str = "run"
    ) -> Observed:
        """Pooled over the usable requests (tokens / time), at their mean decode context."""
        ok = usable(samples)
        if not ok:
            raise FitError("The run has no usable request (unflagged, with verify steps).")
        p = pool(ok)
        context = statistics.fmean(s.decode_context or s.context_tokens for s in ok)
        kinds = {s.text_type for s in ok}
        kind = text_type or (next(iter(kinds)) if len(kinds) == 1 else None)
        prompt = statistics.fmean(s.context_tokens for s in ok)
        output = statistics.median_low([s.max_tokens for s in ok])
        return cls(p.tok_s, context, kind, p.commit, p.step_s, tuple(ok), (), source,
                   prompt, output)  # fmt: skip

    @classmethod
    def from_live(
        cls,
        pairs: Sequence[tuple[float, float]],
        *,
        tok_s: float,
        commit: float,
        step_s: float,
        context: float,
        text_type: str | None = None,
    ) -> Observed:
        return cls(tok_s, context, text_type, commit, step_s, (), tuple(pairs), "live")

    def at_decode(self, output: int) -> Observed:
        """A typed prompt length read with `output` tokens out: its mid-decode context."""
        if self.resolved or self.prompt is None:
            return self
        return replace(self, output=output, context=self.prompt + output / 2, follows_sweep=True)

    def resample(
        self, rng: random.Random, *, by_passage: bool = False, passage_shift: float | None = None
    ) -> tuple[float, float | None]:
        """(tok/s, commit) of one bootstrap draw of the samples behind this figure;
        `by_passage`: within each passage it read (see `verdict.paired`); a typed figure
        is divided by a draw of its noise, and of its passage term unless `passage_shift`
        gives the one it shares with the figure it is compared with."""
        shift = math.exp(rng.gauss(0.0, self.drift_sd)) if self.drift_sd > 0 else 1.0
        layers = strata(self.requests, passage) if by_passage else None
        if layers is not None:
            p = pool([s for layer in layers for s in rng.choices(layer, k=len(layer))])
            return p.tok_s / shift, p.commit
        if len(self.requests) >= 2:
            p = pool(rng.choices(self.requests, k=len(self.requests)))
            return p.tok_s / shift, p.commit
        if len(self.live) >= 2:
            drawn = rng.choices(self.live, k=len(self.live))
            tok_s = statistics.median(t for t, _ in drawn)
            return tok_s / shift, statistics.median(c for _, c in drawn)
        if self.noise is not None:
            ratio = self.noise.draw(rng, self.typed_requests)
            if self.passages is not None:  # each typed request read a passage of its own
                log_shift = passage_shift
                if log_shift is None:
                    log_shift = self.passages.draw(rng, self.typed_requests)
                ratio *= math.exp(log_shift)
            return self.tok_s / ratio, self.commit
        return self.tok_s, self.commit

    def passage_log_sd(self) -> float:
        """The SD (log) of the passage term its draws carry (0 when it has none)."""
        p = self.passages
        if p is None or p.df < 1:
            return 0.0
        k = max(1, self.typed_requests)
        # the median of k normal draws: variance about pi / (2k) of one draw's for k > 2
        median_share = 1.0 if k <= 2 else math.pi / (2 * k)
        share = (1.0 / k if k == 2 else median_share) + 1.0 / max(1, p.passages)
        # sigma drawn from sigma^2 df / chi2_df has the variance sigma^2 df / (df - 2)
        inflate = p.df / (p.df - 2) if p.df > 2 else 3.0
        return p.sigma * math.sqrt(share * inflate)

    def where(self) -> str:
        """Where it was taken, saying which context: "prompt 256 + 64 out (mid-decode
        context 288)" or "mid-decode context 1014"."""
        if self.prompt is not None and self.output is not None:
            return (f"prompt {self.prompt:.0f} + {self.output} out (mid-decode context "
                    f"{self.context:.0f})")  # fmt: skip
        return f"mid-decode context {self.context:.0f}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "context": self.context,
            "context_meaning": "mid-decode (prompt + half the output)",
            "prompt": self.prompt,
            "output": self.output,
            "text_type": self.text_type,
            "commit": self.commit,
            "step_s": self.step_s,
            "n": self.n,
            "source": self.source,
            "noise": self.noise.as_dict() if self.noise else None,
            "drift_sd": self.drift_sd,
            "typed_requests": self.typed_requests if self.is_typed else None,
            "held_out": self.held_out if self.is_typed else None,
            "same_prompts": self.same_prompts if self.is_typed else None,
            "passage_spread": self.passages.as_dict() if self.passages else None,
        }


@dataclass(frozen=True)
class FactorRange:
    """One factor's multiplier on tok/s with its interval. `exact`: why it has no
    spread by construction (the same context or text on both sides: exactly 1; greedy
    commit on the same passages: exactly what it is), said as such."""

    name: str  # "context" | "text" | "residual" | "commit" | "baseline"
    ratio: Interval
    detail: str = ""
    exact: str = ""  # why it is exact ("same context"), empty when it is not
    # The interval "not physics" is decided on (the residual's, at `CHANGE_LEVEL`); None:
    # `ratio` serves both questions.
    decision: Interval | None = None

    @property
    def moved(self) -> bool:
        """Its interval excludes no change and it is more than `MATTERS` (10%) off it."""
        if self.exact:
            return far(self.ratio.value, MATTERS)
        if self.zero_width:  # nothing behind it to resample: no claim either way
            return False
        return not self.ratio.contains(1.0) and far(self.ratio.value, MATTERS)

    @property
    def zero_width(self) -> bool:
        return self.ratio.low == self.ratio.high

    def text(self) -> str:
        if self.exact:
            if abs(self.ratio.value - 1.0) < 1e-9:
                return f"no change (exact: {self.exact})"
            return f"{self.ratio.value - 1:+.0%} (exact: {self.exact})"
        if self.zero_width:
            return f"{self.ratio.value - 1:+.0%} (no interval: nothing to resample)"
        return ChangeInterval(self.ratio).text()

    def times(self) -> str:
        """ "x0.52 [0.47–0.58]", or "x1.00 (exact: same text)"."""
        if self.exact:
            return f"x{self.ratio.value:.2f} (exact: {self.exact})"
        r = self.ratio
        return f"x{r.value:.2f} [{r.low:.2f}–{r.high:.2f}]"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ratio": self.ratio.as_dict(), "moved": self.moved,
                "text": self.text(), "detail": self.detail,
                "exact": self.exact or None}  # fmt: skip


@dataclass(frozen=True)
class Judgement:
    """The verdict on one observed figure: its outcome, why, and the arithmetic."""

    outcome: Outcome
    headline: str
    observed: Observed
    baseline: Observed | None = None
    text_type: str | None = None
    text_inferred: bool = False
    expected: Interval | None = None  # tok/s the baseline x factors (or the model) expects
    factors: tuple[FactorRange, ...] = ()
    baseline_check: FactorRange | None = None  # baseline / the model's prediction for it
    commit_check: FactorRange | None = None  # observed commit / what context and text explain
    reasons: tuple[str, ...] = ()  # why not enough evidence
    problems: tuple[str, ...] = ()  # measurement problems found on the way
    offer: str | None = None  # the command that would settle it
    offer_contexts: tuple[int, ...] = ()  # the prompt lengths it sweeps
    offer_text_types: tuple[str, ...] = ()  # and the text types
    lines: tuple[str, ...] = ()  # the arithmetic and notes, a line each
    model_contexts: tuple[float, float] | None = None
    sweep_requests: int = 0
    paired: bool = False  # intervals resampled within passages (see `verdict.paired`)
    offer_output: int | None = None  # the output length the offered sweep uses
    # the measurement that settles a verdict the passage term left open (`settle_plan`)
    settle: SettlePlan | None = None
    # where the passage term leaves the answer open or carries a "not physics": how to
    # read the figures on the same passages (the settling run, or the baseline's prompts)
    confirm: str = ""

    def factor(self, name: str) -> FactorRange | None:
        return next((f for f in self.factors if f.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "headline": self.headline,
            "observed": self.observed.as_dict(),
            "baseline": self.baseline.as_dict() if self.baseline else None,
            "text_type": self.text_type,
            "text_inferred": self.text_inferred,
            "expected_tok_s": self.expected.as_dict() if self.expected else None,
            "factors": [f.as_dict() for f in self.factors],
            "baseline_check": self.baseline_check.as_dict() if self.baseline_check else None,
            "commit_residual": self.commit_check.as_dict() if self.commit_check else None,
            "reasons": list(self.reasons),
            "problems": list(self.problems),
            "offer": self.offer,
            "offer_contexts": list(self.offer_contexts),
            "offer_contexts_meaning": "prompt lengths",
            "offer_output": self.offer_output,
            "offer_text_types": list(self.offer_text_types),
            "arithmetic": list(self.lines),
            "model_contexts": list(self.model_contexts) if self.model_contexts else None,
            "model_contexts_meaning": "mid-decode (prompt + half the output)",
            "sweep_requests": self.sweep_requests,
            "paired": self.paired,
            "settle": self.settle.as_dict() if self.settle else None,
            "confirm": self.confirm or None,
        }

    def text(self) -> str:
        out = [self.headline]
        out += [f"  {line}" for line in self.lines]
        out += [f"  measurement problem: {p}" for p in self.problems]
        if self.offer:
            out.append(f"  to settle it: {self.offer}")
        return "\n".join(out)


@dataclass(frozen=True)
class Reach:
    """A context a suggested sweep must cover: `context` mid-decode; `prompt` set when
    the figure follows the sweep's output length (a typed prompt without an output), so
    the sweep covers that prompt whatever output it uses."""

    context: float
    prompt: float | None = None

    @classmethod
    def of(cls, figure: Observed) -> Reach:
        return cls(figure.context, figure.prompt if figure.follows_sweep else None)


@dataclass(frozen=True)
class Sweep:
    """The sweep requests a model is fitted from, grouped by point for resampling;
    `noise_profile` is the host's calibration where one is stored (`typed_noise`)."""

    samples: tuple[RequestSample, ...]
    host: str = "HOST"
    context_limit: int | None = None
    source: str = "the stored sweep"
    noise_profile: NoiseProfile | None = None

    @property
    def fitted(self) -> list[RequestSample]:
        return [s for s in self.samples if s.ok and s.step_time_s and s.commit_len
                and s.verify_steps and s.decode_context is not None]  # fmt: skip

    def groups(self) -> list[list[RequestSample]]:
        by: dict[tuple[str, float], list[RequestSample]] = {}
        for s in self.fitted:
            by.setdefault((s.text_type, round(s.decode_context or 0)), []).append(s)
        return list(by.values())

    def output_tokens(self) -> int:
        outs = [s.max_tokens for s in self.fitted]
        return statistics.median_low(outs) if outs else 64

    def prompt_contexts(self) -> list[int]:
        return sorted({s.context_tokens for s in self.fitted})

    def offer_output(self, needed: Sequence[Reach | float]) -> int:
        """The sweep's output, shortened where a needed context sits too close to either
        end for it (a mid-decode context c needs a prompt c - out/2 >= MIN_PROMPT, and
        c + out/2 within the context length)."""
        out = self.output_tokens()
        limit = self.context_limit
        for r in map(_reach, needed):
            if r.prompt is not None:
                if limit is not None:
                    out = min(out, int(limit - r.prompt))
                continue
            out = min(out, int(2 * (r.context - MIN_PROMPT)))
            if limit is not None:
                out = min(out, int(2 * (limit - r.context)))
        return max(MIN_OUTPUT, out // 8 * 8)

    def offer_contexts(
        self, needed: Sequence[Reach | float], output: int | None = None
    ) -> list[int]:
        """The swept prompt lengths plus those of the `needed` contexts, read with the
        offered output, each clamped to fit."""
        out = self.offer_output(needed) if output is None else output
        top = None if self.context_limit is None else self.context_limit - out
        wanted = set(self.prompt_contexts())
        for r in map(_reach, needed):
            prompt = r.prompt if r.prompt is not None else r.context - out / 2
            prompt = max(MIN_PROMPT, round(prompt))
            wanted.add(prompt if top is None else min(prompt, top))
        if len(wanted) < 2:  # a step line needs two contexts: add a short and a longer one
            longer = 4 * max(wanted, default=256)
            wanted |= {64, longer if top is None else min(longer, top)}
        return sorted(wanted)

    def sweep_command(self, needed: Sequence[Reach | float], text_types: Sequence[str]) -> str:
        """`specconsole sweep ...` covering the swept contexts and the `needed` ones."""
        out = self.offer_output(needed)
        contexts = ",".join(str(c) for c in self.offer_contexts(needed, out))
        kinds = ",".join(sorted(set(text_types))) or "code"
        return (
            f"specconsole sweep {self.host} --contexts {contexts} --output {out} "
            f"--text {kinds} --repeat 3"
        )


def _reach(r: Reach | float) -> Reach:
    return r if isinstance(r, Reach) else Reach(float(r))


def typed_baseline(
    sweep: Sweep,
    tok_s: float | None,
    context: float | None,
    text_type: str | None,
    *,
    output: int | None = None,
    requests: int = 1,
    held_out: bool = True,
    windows: Sequence[str] = (),
    same_prompts: bool = False,
) -> Observed | None:
    """A typed baseline figure at prompt length `context`; without one, at the shortest
    swept point (where a short-prompt baseline sits); without a text type, the observed
    one's."""
    if tok_s is None:
        return None
    if context is None:
        fitted = sweep.fitted
        if fitted:
            low = min(fitted, key=lambda s: s.decode_context or 0)
            return Observed.typed_at(tok_s, low.context_tokens, text_type,
                                     output=low.max_tokens, requests=requests,
                                     held_out=held_out, windows=windows,
                                     same_prompts=same_prompts)  # fmt: skip
        context = 0.0
    return Observed.typed_at(tok_s, context, text_type, output=output, requests=requests,
                             held_out=held_out, windows=windows,
                             same_prompts=same_prompts)  # fmt: skip
