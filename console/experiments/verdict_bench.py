"""How often is the verdict right? Scenarios on a real engine whose cause is known.

Each scenario measures a "before" and an "after" figure where the true cause of the
change is known by construction, and asks `verdict.judge` about it:

  null         the same engine, context and text twice         -> physics (no residual)
  context      the same text, context 256 -> 1800              -> physics (context factor)
  text         code -> prose at the same context               -> physics (text factor)
  spec-off     speculation switched off (a flag)               -> not physics
  tree-budget  a DDTree budget of 3 instead of the drafter's   -> not physics
               default (a regression: rounds draft fewer tokens on the same text
               and context; bundled engine only)

A run is: a context sweep on the engine's own flags covering every context and text type
the scenarios use (the model is refitted from it in every run, never reused), then each
scenario's two sides. Every figure, the sweep's included, reads the same passages
(`PASSAGES` windows of its text), so the verdict can pair them by passage
(`verdict.paired`): greedy decoding commits the same tokens on a passage every time,
which leaves timing as the only noise. How many times each passage is read follows the
console's sample-size rule (`sample_size`): rounds go on until every figure's pooled
tok/s interval is within `TARGET_REL` (5%), at least `MIN_ROUNDS`, at most `MAX_ROUNDS`.
A residual is the product of up to four such figures (observed, baseline and the model
at both points), so ± 5% each keeps it well inside the verdict's ± 15% limit; on this
2-core host the step time of one passage drifts by ± 15-20% over seconds (other jobs
on the same cores), which a fixed three reads cannot average out. The sides of the
no-flag scenarios (and the sweep) are interleaved request by request, so drift falls on
all of them alike; the flag scenarios measure their "before" on the original flags,
restart with the change, measure "after", and the original flags come back through the
normal apply path at the end of each run and always at the end (errors and Ctrl-C
included).

Scoring: the outcome is right when it is the true one. "Not enough evidence" is also
right when the true effect (the pooled after / before tok/s of that run) is within
`SMALL` (15%): a change that small is inside what a bug hunt cares about, so declining to
call it is not a miss. A false alarm is "not physics" where the truth is physics.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.decompose import FitError
from console.analysis.records import RequestSample
from console.analysis.sample_size import TARGET_REL, SampleTarget, narrow_enough
from console.analysis.verdict import Judgement, Observed, Outcome, Sweep, judge
from console.backends import get_adapter
from console.config import FlagValue
from console.experiments.breakeven import (
    _finish_even_if_cancelled,
    _restore,
    restore_changes,
    speculation_off,
)
from console.measure import methods
from console.measure.session import MeasureError, MeasureSession

SMALL = 0.15  # a true effect within 15%: "not enough evidence" is not counted wrong
PASSAGES = 2  # windows of each text every figure reads (the same ones everywhere)
MIN_ROUNDS = 3  # reads of each passage per figure at least: two is the least to resample
MAX_ROUNDS = 16  # and at most: ~4 minutes a run on two cores (all five scenarios)
# Tokens per request: ~25 rounds on the bundled pair; a request costs mostly its prompt,
# so more rounds a request average more timing noise almost for free (1800 + 240 fits
# the bundled pair's 2048 context).
OUTPUT = 240
TREE_BUDGET = 3  # the regression: the drafter's default is its block size minus 1 (15)

Tick = Callable[[int, int], None]
Changes = Callable[[str, dict[str, FlagValue]], dict[str, str | None]]


@dataclass(frozen=True, order=True)
class Point:
    text_type: str
    context: int

    def __str__(self) -> str:
        return f"{self.text_type}@{self.context}"


def _smaller_tree(engine: str, flags: dict[str, FlagValue]) -> dict[str, str | None]:
    budget_flag = get_adapter(engine).tree_budget_flag
    if budget_flag is None:
        raise MeasureError(
            "The tree-budget scenario needs the bundled engine's "
            "speculative-ddtree-budget flag; leave it out with --scenarios."
        )
    return {budget_flag: str(TREE_BUDGET)}


@dataclass(frozen=True)
class Scenario:
    name: str
    truth: Outcome
    what: str
    before: Point
    after: Point
    changes: Changes | None = None  # the flag changes the "after" side runs with


SHORT, LONG = 256, 1800
_ALL = (
    Scenario("null", "physics", "the same engine, context and text measured twice",
                 Point("code", SHORT), Point("code", SHORT)),
        Scenario("context", "physics", f"code at context {SHORT} -> {LONG}",
                 Point("code", SHORT), Point("code", LONG)),
        Scenario("text", "physics", f"code -> prose at context {SHORT}",
                 Point("code", SHORT), Point("prose", SHORT)),
        Scenario("spec-off", "not physics", "speculation switched off by a flag",
                 Point("code", SHORT), Point("code", SHORT), speculation_off),
        Scenario("tree-budget", "not physics",
                 f"a DDTree budget of {TREE_BUDGET} (a regression at the same text and context)",
                 Point("code", SHORT), Point("code", SHORT), _smaller_tree),
)  # fmt: skip
SCENARIOS: dict[str, Scenario] = {s.name: s for s in _ALL}


# -- scoring -----------------------------------------------------------------------------


def right(truth: Outcome, outcome: str, effect: float | None) -> bool:
    """The outcome is the true one, or "not enough evidence" on a true effect within
    `SMALL` (unknown effect: counted wrong)."""
    if outcome == truth:
        return True
    return outcome == "not enough evidence" and effect is not None and abs(effect) <= SMALL


def tok_s(samples: Sequence[RequestSample]) -> float | None:
    """Pooled decode tok/s (tokens / decode time): steps are not needed, so it holds for
    an autoregressive side too."""
    ok = [s for s in samples if s.ok and s.decode_time_s and s.completion_tokens > 1]
    seconds = sum(s.decode_time_s or 0.0 for s in ok)
    return sum(s.completion_tokens - 1 for s in ok) / seconds if seconds else None


@dataclass(frozen=True)
class Trial:
    """One run of one scenario: the verdict and the true effect it was scored against."""

    scenario: str
    run: int
    truth: Outcome
    outcome: str
    effect: float | None  # after / before pooled tok/s, minus 1
    headline: str
    judgement: dict[str, Any] = field(default_factory=dict)

    @property
    def right(self) -> bool:
        return right(self.truth, self.outcome, self.effect)

    @property
    def false_alarm(self) -> bool:
        return self.truth == "physics" and self.outcome == "not physics"

    def as_dict(self) -> dict[str, Any]:
        j = self.judgement
        return {
            "scenario": self.scenario, "run": self.run, "truth": self.truth,
            "outcome": self.outcome, "right": self.right, "false_alarm": self.false_alarm,
            "true_effect": self.effect, "headline": self.headline,
            "residual": next((f["ratio"] for f in j.get("factors", ())
                              if f["name"] == "residual"), None),
            "commit_residual": (j.get("commit_residual") or {}).get("ratio"),
            "paired": j.get("paired"),
            "before": j.get("baseline"), "after": j.get("observed"),
            "baseline_check": (j.get("baseline_check") or {}).get("ratio"),
        }  # fmt: skip


def trial_of(scenario: Scenario, run: int, effect: float | None, j: Judgement) -> Trial:
    return Trial(scenario.name, run, scenario.truth, j.outcome, effect, j.headline, j.as_dict())


@dataclass(frozen=True)
class ScenarioScore:
    scenario: Scenario
    trials: tuple[Trial, ...]

    @property
    def counts(self) -> dict[str, int]:
        return {o: sum(t.outcome == o for t in self.trials)
                for o in ("physics", "not physics", "not enough evidence")}  # fmt: skip

    @property
    def n_right(self) -> int:
        return sum(t.right for t in self.trials)

    @property
    def accuracy(self) -> float | None:
        return self.n_right / len(self.trials) if self.trials else None

    @property
    def effects(self) -> list[float]:
        return [t.effect for t in self.trials if t.effect is not None]

    def effect_text(self) -> str:
        e = self.effects
        if not e:
            return "-"
        return f"{statistics.median(e):+.0%} ({min(e):+.0%}..{max(e):+.0%})"

    def as_dict(self) -> dict[str, Any]:
        e = self.effects
        return {
            "scenario": self.scenario.name, "truth": self.scenario.truth,
            "what": self.scenario.what, "runs": len(self.trials), "outcomes": self.counts,
            "right": self.n_right, "accuracy": self.accuracy,
            "false_alarms": sum(t.false_alarm for t in self.trials),
            "true_effect": {"median": statistics.median(e), "min": min(e), "max": max(e)}
            if e else None,
        }  # fmt: skip


def scores(trials: Sequence[Trial]) -> list[ScenarioScore]:
    names = list(dict.fromkeys(t.scenario for t in trials))
    return [ScenarioScore(SCENARIOS[n], tuple(t for t in trials if t.scenario == n))
            for n in names]  # fmt: skip


def false_alarms(trials: Sequence[Trial]) -> tuple[int, int]:
    """("not physics" where the truth is physics, trials whose truth is physics)."""
    physics = [t for t in trials if t.truth == "physics"]
    return sum(t.false_alarm for t in physics), len(physics)


@dataclass
class BenchResult:
    trials: list[Trial]
    params: dict[str, Any]
    flags_before: dict[str, FlagValue]
    flags_after: dict[str, FlagValue] | None = None
    seconds: float = 0.0
    status: str = "complete"

    @property
    def restored(self) -> bool:
        return self.flags_after == self.flags_before

    def table(self) -> list[str]:
        head = (f"{'scenario':<12} {'truth':<12} {'true effect (median, range)':<28} "
                f"{'physics':>7} {'not phys.':>9} {'not enough':>10} {'accuracy':>13}")  # fmt: skip
        lines = [head, "-" * len(head)]
        for s in scores(self.trials):
            c = s.counts
            acc = f"{s.n_right}/{len(s.trials)} {s.accuracy:.0%}" if s.trials else "-"
            lines.append(
                f"{s.scenario.name:<12} {s.scenario.truth:<12} {s.effect_text():<28} "
                f"{c['physics']:>7} {c['not physics']:>9} {c['not enough evidence']:>10} "
                f"{acc:>13}"
            )
        alarms, physics = false_alarms(self.trials)
        null = [t for t in self.trials if t.scenario == "null"]
        lines.append(
            f"false alarms ('not physics' where the truth is physics): {alarms}/{physics}"
            + (f"; on null: {sum(t.false_alarm for t in null)}/{len(null)}" if null else "")
        )
        return lines

    def as_dict(self) -> dict[str, Any]:
        alarms, physics = false_alarms(self.trials)
        null = [t for t in self.trials if t.scenario == "null"]
        return {
            "status": self.status,
            "params": self.params,
            "seconds": self.seconds,
            "scenarios": [s.as_dict() for s in scores(self.trials)],
            "false_alarms": {
                "count": alarms,
                "of": physics,
                "rate": alarms / physics if physics else None,
                "null": sum(t.false_alarm for t in null),
            },
            "flags_before": self.flags_before,
            "flags_after": self.flags_after,
            "restored": self.restored,
            "trials": [t.as_dict() for t in self.trials],
        }


# -- the runner --------------------------------------------------------------------------


def _changed(original: dict[str, FlagValue], changes: dict[str, str | None]) -> dict[str, Any]:
    target: dict[str, Any] = dict(original)
    for k, v in changes.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = v
    return target


class _Ticker:
    def __init__(self, total: int, tick: Tick | None) -> None:
        self.done, self.total, self.tick = 0, total, tick

    def step(self) -> None:
        self.done += 1
        if self.tick:
            self.tick(self.done, self.total)


async def run_bench(
    session: MeasureSession,
    *,
    scenarios: Sequence[str] = tuple(SCENARIOS),
    runs: int = 5,
    output_tokens: int = OUTPUT,
    target: SampleTarget = SampleTarget(
        target_rel=TARGET_REL, min_repeat=MIN_ROUNDS, max_repeat=MAX_ROUNDS, passages=PASSAGES
    ),
    seed: int = 0,
    timeout: float = 600.0,
    tick: Tick | None = None,
    on_trial: Callable[[Trial], None] | None = None,
) -> BenchResult:
    """Every scenario `runs` times; the engine ends on its original flags, always."""
    unknown = [n for n in scenarios if n not in SCENARIOS]
    if unknown:
        raise MeasureError(
            f"Unknown scenario {unknown[0]!r}; the scenarios are {', '.join(SCENARIOS)}."
        )
    if runs < 1 or target.min_repeat < 2 or not target.passages:
        raise MeasureError("The benchmark needs --runs >= 1, 2+ rounds and fixed passages.")
    chosen = [SCENARIOS[n] for n in dict.fromkeys(scenarios)]
    service = session.service
    facts = await session.facts(refresh=True)
    original = dict((await service.current_config()).flags)
    # Every change is computed and planned before anything runs (a refused flag fails here).
    changed = {s.name: s.changes(session.engine, original) for s in chosen if s.changes}
    for changes in changed.values():
        await service.plan(changes)
    points = sorted({p for s in chosen for p in (s.before, s.after)})
    contexts = sorted({p.context for p in points} | {SHORT, LONG})  # a step line needs two
    kinds = sorted({p.text_type for p in points})
    for c in contexts:
        session.check_fits(facts, c, output_tokens)
    params = {
        "scenarios": [s.name for s in chosen], "runs": runs, "output_tokens": output_tokens,
        "sample_target": target.as_dict(), "sweep_contexts": contexts,
        "sweep_text_types": kinds, "seed": seed, "model": "refitted every run from its own sweep",
        "changes": changed,
    }  # fmt: skip
    figures = len(contexts) * len(kinds) + 2 * len(chosen)
    per_run = figures * target.max_repeat * target.passages  # the most a run can take
    ticker = _Ticker(runs * per_run, tick)
    launch = await service.store()
    last_good_before = await launch.last_good()
    result = BenchResult([], params, original)
    started = time.monotonic()
    try:
        for run in range(runs):
            session.note(f"run {run + 1} of {runs}")
            for trial in await _one_run(
                session, chosen, changed, original, run,
                contexts=contexts, kinds=kinds, output_tokens=output_tokens, target=target,
                seed=seed, timeout=timeout, ticker=ticker,
                last_good_before=last_good_before,
            ):  # fmt: skip
                result.trials.append(trial)
                if on_trial:
                    on_trial(trial)
    except (asyncio.CancelledError, KeyboardInterrupt):
        result.status = "incomplete"
        raise
    finally:
        result.flags_after, cancelled = await _finish_even_if_cancelled(
            _restore(session, original, last_good_before, timeout)
        )
        result.seconds = time.monotonic() - started
        if cancelled:
            raise asyncio.CancelledError
    return result


async def _one_run(
    session: MeasureSession,
    chosen: Sequence[Scenario],
    changed: dict[str, dict[str, str | None]],
    original: dict[str, FlagValue],
    run: int,
    *,
    contexts: Sequence[int],
    kinds: Sequence[str],
    output_tokens: int,
    target: SampleTarget,
    seed: int,
    timeout: float,
    ticker: _Ticker,
    last_good_before: Any,
) -> list[Trial]:
    """One sweep and every scenario's two sides; the flags back to the original after."""
    service = session.service
    points = [Point(k, c) for c in contexts for k in kinds]
    sides: dict[tuple[str, str], list[RequestSample]] = {}
    sweep_params = {"contexts": list(contexts), "output_tokens": output_tokens,
                    "text_types": list(kinds), "sample_target": target.as_dict(),
                    "verdict_bench_run": run}  # fmt: skip

    async def read(point: Point, p: int, record: Any = None) -> RequestSample:
        spec = await session.spec(point.text_type, point.context, output_tokens, index=p)
        sample = await session.measure(spec, record)
        ticker.step()
        return sample

    async def side(s: Scenario, name: str, point: Point, p: int) -> None:
        sides.setdefault((s.name, name), []).append(await read(point, p))

    # Original flags: the sweep, both sides of the no-flag scenarios and the "before" of
    # the others, interleaved request by request in rounds (every passage of every figure
    # once a round), so drift on a shared host falls on the model and on both sides alike
    # instead of setting the sweep's block apart from the sides' (which reads as a
    # baseline the sweep does not describe).
    with session.labelled("verdict-bench"):
        async with session.run("context-sweep", sweep_params) as record:
            await _warm(session, points, output_tokens)
            for r in range(target.max_repeat):
                for p in range(target.passages or 1):
                    for point in points:
                        await read(point, p, record)
                    for s in chosen:
                        await side(s, "before", s.before, p)
                        if s.changes is None:
                            await side(s, "after", s.after, p)
                by_point: dict[Point, list[RequestSample]] = {}
                for x in record.samples:
                    by_point.setdefault(Point(x.text_type, x.context_tokens), []).append(x)
                if r + 1 >= target.min_repeat and _narrow(
                    [*by_point.values(), *sides.values()], target
                ):
                    break
    facts = await session.facts(refresh=True)
    sweep = Sweep(tuple(record.samples), service.profile.name, facts.context_limit)
    try:
        for s in chosen:
            if s.changes is not None:
                sides[(s.name, "after")] = await _after_with_flags(
                    session, s, _changed(original, changed[s.name]), changed[s.name],
                    output_tokens=output_tokens, target=target, timeout=timeout, ticker=ticker,
                )  # fmt: skip
    finally:
        if changed:
            await _finish_even_if_cancelled(_restore(session, original, last_good_before, timeout))
            await session.facts(refresh=True)
    out = []
    for s in chosen:
        before, after = sides[(s.name, "before")], sides[(s.name, "after")]
        b, a = tok_s(before), tok_s(after)
        effect = a / b - 1 if a and b else None
        out.append(_judged(s, run, effect, sweep, before, after, seed))
    return out


async def _after_with_flags(
    session: MeasureSession,
    s: Scenario,
    flags: dict[str, FlagValue],
    change: dict[str, str | None],
    *,
    output_tokens: int,
    target: SampleTarget,
    timeout: float,
    ticker: _Ticker,
) -> list[RequestSample]:
    """A flag scenario's "after" side: restart with its flags (through plan + apply, as
    `set` does), then its requests until narrow enough. The caller restores the flags."""
    service = session.service
    current = dict((await service.current_config()).flags)
    changes = restore_changes(current, flags)
    session.note(f"restarting {service.profile.name} for {s.name}: {change}")
    applied = await service.apply(await service.plan(changes), timeout=timeout)
    if not applied.ok:
        raise MeasureError(
            f"The engine did not come up for the {s.name} scenario "
            f"({applied.event.describe()}); its original flags are being restored."
        )
    after: list[RequestSample] = []
    async with service.action(f"a verdict benchmark run ({s.name})"):
        await session.facts(refresh=True)  # the after side carries the new flags
        await _warm(session, [s.after], output_tokens)
        for r in range(target.max_repeat):
            for p in range(target.passages or 1):
                spec = await session.spec(s.after.text_type, s.after.context, output_tokens,
                                          index=p)  # fmt: skip
                after.append(await session.measure(spec, None))
                ticker.step()
            if r + 1 >= target.min_repeat and _narrow([after], target):
                break
    return after


def _narrow(figures: Sequence[Sequence[RequestSample]], target: SampleTarget) -> bool:
    """Every figure's pooled tok/s interval (resampled within passages) is narrow enough."""
    return all(narrow_enough(f, target) for f in figures)


async def _warm(session: MeasureSession, points: Sequence[Point], output_tokens: int) -> None:
    """One unrecorded request per point after a (re)start: the first request at a new
    context pays for growing the KV cache and the allocator, which is no part of a step."""
    await methods._warmup(session, points[0].text_type)
    for point in points:
        await session.measure(await session.spec(point.text_type, point.context, output_tokens))


def _judged(
    s: Scenario,
    run: int,
    effect: float | None,
    sweep: Sweep,
    before: list[RequestSample],
    after: list[RequestSample],
    seed: int,
) -> Trial:
    try:
        j = judge(
            sweep,
            Observed.from_requests(after, s.after.text_type),
            Observed.from_requests(before, s.before.text_type),
            seed=seed * 1000 + run,
        )
    except FitError as exc:  # e.g. a side without verify steps: the verdict has no figure
        return Trial(s.name, run, s.truth, "not enough evidence", effect,
                     f"Not enough evidence: {exc}")  # fmt: skip
    return trial_of(s, run, effect, j)
