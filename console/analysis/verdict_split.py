"""The split behind a verdict and its bootstrap: observed / baseline = context x text x
residual through the model's predictions, recomputed on resampled sweeps and figures.

`verdict.judge` calls `split` once on the figures and `draws` for the intervals; `paired`
says whether the figures read the sweep's own passages, so the resampling can stay
within each passage (timing noise only).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from console.analysis.decompose import FitError, ThroughputModel, fit
from console.analysis.intervals import Interval, passage, percentile, strata
from console.analysis.records import RequestSample
from console.analysis.thresholds import LEVEL
from console.analysis.verdict_records import Observed, Sweep
from console.errors import ConsoleError


@dataclass(frozen=True)
class Split:
    context: float
    text: float
    residual: float
    expected: float
    baseline_ratio: float | None  # baseline / the model's own prediction for it
    # observed commit / the commit context and text explain; None without a measured one
    commit_residual: float | None = None


def split(
    model: ThroughputModel,
    observed: float,
    ctx: float,
    kind: str,
    baseline: float | None,
    b_ctx: float,
    b_kind: str,
    commits: tuple[float | None, float | None] = (None, None),
) -> Split:
    """observed / baseline = context x text x residual, through the model's predictions.
    Without a baseline the model's own figure at the baseline point stands in for it, so
    the residual is then observed against the model's prediction."""
    at_base = model.predict(b_ctx, b_kind)
    moved_ctx = model.predict(ctx, b_kind)
    here = model.predict(ctx, kind)
    ctx_factor, text_factor = moved_ctx / at_base, here / moved_ctx
    start = at_base if baseline is None else baseline
    expected = start * ctx_factor * text_factor
    # Commit alone, the same way: a flag or drafter change shows in commit length even
    # where a cheaper round hides it in tok/s, and commit does not drift with host load.
    obs_commit, base_commit = commits
    commit_residual = None
    if obs_commit is not None:
        here_c, base_c = model.commit_at(kind, ctx), model.commit_at(b_kind, b_ctx)
        expected_c = here_c if base_commit is None else base_commit * here_c / base_c
        commit_residual = obs_commit / expected_c
    return Split(
        ctx_factor,
        text_factor,
        observed / expected,
        expected,
        None if baseline is None else baseline / at_base,
        commit_residual,
    )


def paired(sweep: Sweep, observed: Observed, baseline: Observed | None) -> bool:
    """Whether the figures read exactly the passages the sweep read at their points, each
    passage at least twice everywhere.

    Greedy decoding commits the same tokens in the same rounds on a passage every time,
    so the model's figure at a point and a figure taken on the same passages share their
    commit exactly: the passage-to-passage spread in commit (2.0-12.6 on the bundled pair)
    cancels in the residual, and what is left to resample is timing, within each passage
    (`intervals.strata`). Figures on other passages (live traffic, a typed prompt) keep
    the plain bootstrap: there the passage spread is part of the uncertainty."""
    groups: dict[tuple[str, float], set[str]] = {}
    for g in sweep.groups():
        if strata(g, passage) is None:
            return False
        groups[(g[0].text_type, round(g[0].decode_context or 0))] = {passage(s) for s in g}
    for figure in (observed, baseline):
        if figure is None:
            continue
        if len(figure.requests) < 2 or strata(figure.requests, passage) is None:
            return False
        keys = {(s.text_type, round(s.decode_context or 0)) for s in figure.requests}
        swept = set().union(*(groups.get(k, set()) for k in keys))
        if {passage(s) for s in figure.requests} != swept:
            return False
    return True


def window(sample: RequestSample) -> str:
    """Which window of its text a request read, whatever its context: the prompt id's
    `#k` (a sweep reads windows 0..m-1 of each text at every point)."""
    return sample.prompt_id.rpartition("#")[2]


def matched_sweep(sweep: Sweep, observed: Observed, baseline: Observed | None) -> Sweep | None:
    """The sweep restricted to the windows the figures read, where each figure rests on
    requests of its own and every passage it read is one the sweep read at its point:
    a side that read 2 of the sweep's 6 passages shares their commit exactly with the
    sweep's reads of those 2, but not with the other 4 (commit 4.6 to 12 between
    passages of code at 256 on the bundled pair), so a model of all 6 put a constant
    -22% on code -> prose at 256 that no resample could widen. A typed figure says which
    windows it read (`Observed.windows`, as `prompt --repeat N` reads 0..N-1). None where
    there is nothing to match (typed figures on the operator's own prompts, other
    passages), or where the restricted sweep would lose a point or leave one with a
    single request (the model then keeps the whole sweep)."""
    figures = [f for f in (observed, baseline) if f is not None]
    if not figures:
        return None
    swept: dict[tuple[str, int], set[str]] = {}
    for s in sweep.fitted:
        swept.setdefault((s.text_type, s.context_tokens), set()).add(passage(s))
    windows: set[str] = set()
    for f in figures:
        if f.windows and not f.requests:  # typed, on the sweep's passages it names
            if not set(f.windows) <= {window(s) for s in sweep.fitted}:
                return None  # it read windows the sweep never did: held out after all
            windows |= set(f.windows)
            continue
        if len(f.requests) < 2:
            return None
        for s in f.requests:
            if passage(s) not in swept.get((s.text_type, s.context_tokens), set()):
                return None
        windows |= {window(s) for s in f.requests}
    if len(windows) == len({window(s) for s in sweep.fitted}):
        return None  # the figures read every window: the sweep is already matched
    kept = tuple(s for s in sweep.samples if window(s) in windows)
    matched = replace(sweep, samples=kept)
    if len(matched.groups()) < len(sweep.groups()) or min(map(len, matched.groups())) < 2:
        return None  # a point lost, or left with one request: no spread to resample
    return matched


def strata_everywhere(sweep: Sweep) -> bool:
    """Whether every sweep point read each of its passages at least twice."""
    return all(strata(g, passage) is not None for g in sweep.groups())


def typed_only(observed: Observed, baseline: Observed | None) -> bool:
    """Whether every figure is typed (no samples behind it).

    A typed figure's noise is this host's timing spread about each passage's own mean
    (`typed_noise`): it is read as a figure of the console's own prompts, the passages
    the sweep read. The sweep read each of them equally often at every point by design,
    so its bootstrap keeps those shares too (resampling within each passage): redrawn
    point by point, the passages' commit spread (2.0-12.6 on the bundled pair) landed in
    the context factor (x0.36 [0.26-0.65] where the same passages paired gave
    [0.36-0.38]), and a 63% context drop typed back read "not enough evidence". Figures
    with samples on other passages (live traffic) keep the plain bootstrap."""
    return all(f.n < 2 for f in (observed, baseline) if f is not None)


def interval(point: float, draws: list[float], level: float = LEVEL) -> Interval:
    if not draws:
        return Interval(point, point, point)
    tail = (1 - level) / 2
    lo, hi = percentile(draws, tail), percentile(draws, 1 - tail)
    return Interval(point, min(lo, point), max(hi, point))


def draws(
    sweep: Sweep,
    observed: Observed,
    baseline: Observed | None,
    ctx_args: tuple[float, str, float, str],
    *,
    seed: int,
    resamples: int,
    by_passage: bool = False,
    sweep_by_passage: bool = False,
) -> list[Split]:
    """The split recomputed on `resamples` bootstrap draws: the sweep's requests resampled
    within each point (so every point stays in the fit), the model refitted, and the
    observed and baseline figures redrawn from their own samples; `by_passage` (see
    `paired`): the figures within the passages they read; `sweep_by_passage` (paired, or
    `typed_only`): the sweep within its passages."""
    rng = random.Random(seed)
    groups = [(strata(g, passage) if sweep_by_passage else None) or [g]
              for g in sweep.groups()]  # fmt: skip
    ctx, kind, b_ctx, b_kind = ctx_args
    out = []
    for _ in range(resamples):
        drawn = [s for g in groups for layer in g for s in rng.choices(layer, k=len(layer))]
        try:
            model = fit(drawn)
            # the same prompts re-sent: one passage effect for both figures, which then
            # cancels in the residual and stays in the baseline's check against the model
            shared = (observed.passages.draw(rng, observed.typed_requests)
                      if observed.same_prompts and observed.passages else None)  # fmt: skip
            obs, obs_c = observed.resample(rng, by_passage=by_passage, passage_shift=shared)
            base, base_c = (
                baseline.resample(rng, by_passage=by_passage, passage_shift=shared)
                if baseline is not None
                else (None, None)
            )
            commits = (obs_c if observed.n >= 2 else None, base_c)
            out.append(split(model, obs, ctx, kind, base, b_ctx, b_kind, commits))
        except (FitError, ZeroDivisionError):
            continue
    return out


def check_same_prompts(
    prompt: float,
    text_type: str | None,
    output: int | None,
    requests: int,
    baseline: float | None,
    baseline_prompt: float | None,
    baseline_text: str | None,
    baseline_output: int | None,
    baseline_requests: int,
) -> None:
    """Refuses "the same prompts" where the two figures cannot have read them: a figure on
    re-sent prompts shares its passages with the baseline only at the same prompt length,
    text, output and number of prompts (elsewhere they are other passages)."""
    if baseline is None:
        raise ConsoleError("--passages same compares two figures: give the --baseline too.")
    same = (baseline_prompt == prompt and (baseline_text or text_type) == text_type
            and baseline_output == output and baseline_requests == requests)  # fmt: skip
    if not same:
        raise ConsoleError(
            "--passages same needs both figures at the same prompt length, text, output and "
            "request count (the same prompts re-sent); prompts at another point are other "
            "passages: leave it at own."
        )
