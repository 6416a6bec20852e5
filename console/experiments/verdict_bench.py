"""How often is the verdict right? Scenarios whose cause is known, asked through the
operator's own paths.

Each scenario (`verdict_scenarios`) measures a "before" and an "after" side where the
true cause of the change is known by construction, and each of its paths
(`verdict_paths`) asks what an operator would ask: `typed` (the figures typed into
`diagnose`), `explain` (`history explain A B` on the stored sides), and, for the flag
scenarios, `set --baseline` with default options, `--order A-B` and `--bracket`, which
measure their own sides the way that command does. Nothing is judged by a protocol of
the benchmark's own. The host is calibrated once, first, as `specconsole calibrate`
would: every path then carries its measured noise and drift.

A run is: a context sweep on the engine's own flags covering every context and text type
the scenarios use (the model is refitted from it in every run, never reused), each
scenario's two sides, the operator's own figures (`own_figures`: the `typed-own` path,
settled where its answer offers it), then the `set --baseline` trials. The sweep, both
sides of the no-flag scenarios and the "before" of the others are interleaved request by
request in rounds (every passage of every figure once a round), the sides reading the
same `PASSAGES` windows of their text and the sweep `SWEEP_PASSAGES` (a default sweep's
count), until every figure's pooled tok/s interval is within
`TARGET_REL` (at least `MIN_ROUNDS`, at most `MAX_ROUNDS` rounds); a flag scenario's
"after" side restarts with its flags through the normal apply path. The round delay is
a share of each round's own compute (step x1.3: -23% tok/s by construction, reported
beside the measured effect). The original flags come back through the
normal apply path after each flag change and always at the end (errors and Ctrl-C
included). The sides and the sweep are stored in a history store of the benchmark's own
(a temporary file), never in the operator's.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from console.analysis.noise_profile import NoiseProfile as Calibration
from console.analysis.records import RequestSample
from console.analysis.repeat_rule import MODEL_PASSAGES
from console.analysis.sample_size import TARGET_REL, SampleTarget, narrow_enough
from console.analysis.verdict import Sweep
from console.analysis.verdict_scoring import (  # noqa: F401  (the names callers import)
    SMALL,
    ScenarioScore,
    Trial,
    false_alarms,
    not_enough_on_big,
    path_scores,
    right,
    trial_of,
    upper_bound,
)
from console.config import FlagValue
from console.experiments.breakeven import (
    _finish_even_if_cancelled,
    _restore,
    restore_changes,
)
from console.experiments.own_figures import OWN_REQUESTS, own_figure, own_windows
from console.experiments.typed_noise_source import from_calibration
from console.experiments.verdict_paths import (
    baseline_trial,
    bench_calibration,
    effect_of,
    explain_trial,
    store_run,
    typed_own_trial,
    typed_trial,
)
from console.experiments.verdict_result import BenchResult, scores  # noqa: F401
from console.experiments.verdict_scenarios import (  # noqa: F401
    BASELINE_PATHS,
    EXPLAIN,
    LONG,
    PATH_NAMES,
    SCENARIOS,
    SHORT,
    TREE_BUDGET,
    TYPED,
    TYPED_OWN,
    Point,
    Scenario,
)
from console.measure import methods
from console.measure.session import MeasureError, MeasureSession
from console.store import RunStore

PASSAGES = 2  # windows of each text every side reads (the same ones everywhere)
# The sweep reads as many as a default `sweep` does (the first `PASSAGES` of them are the
# sides' too): the verdict's passage term is fitted from it.
SWEEP_PASSAGES = MODEL_PASSAGES
MIN_ROUNDS = 3  # reads of each passage per figure at least: two is the least to resample
MAX_ROUNDS = 16  # and at most
# Tokens per request: ~25 rounds on the bundled pair; a request costs mostly its prompt,
# so more rounds a request average more timing noise almost for free (1800 + 240 fits
# the bundled pair's 2048 context).
OUTPUT = 240

Tick = Callable[[int, int], None]


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


# -- the runner --------------------------------------------------------------------------


@dataclass
class _Bench:
    """What every run of one benchmark shares."""

    session: MeasureSession
    chosen: list[Scenario]
    original: dict[str, FlagValue]
    contexts: list[int]
    kinds: list[str]
    output_tokens: int
    target: SampleTarget
    seed: int
    timeout: float
    ticker: _Ticker
    last_good_before: Any
    store: RunStore
    paths: tuple[str, ...]
    on_trial: Callable[[Trial], None] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    calibration: Calibration | None = None  # the host's, measured first

    def took(self, part: str, since: float) -> None:
        self.timings[part] = self.timings.get(part, 0.0) + time.monotonic() - since

    def emit(self, trial: Trial) -> Trial:
        if self.on_trial:
            self.on_trial(trial)
        return trial

    async def restore(self) -> None:
        await _finish_even_if_cancelled(
            _restore(self.session, self.original, self.last_good_before, self.timeout)
        )
        await self.session.facts(refresh=True)


def _validate(scenarios: Sequence[str], runs: int, target: SampleTarget, paths: Sequence[str]):
    unknown = [n for n in scenarios if n not in SCENARIOS]
    if unknown:
        raise MeasureError(
            f"Unknown scenario {unknown[0]!r}; the scenarios are {', '.join(SCENARIOS)}."
        )
    bad = [p for p in paths if p not in PATH_NAMES]
    if bad or not paths:
        raise MeasureError(f"Unknown path {bad[0] if bad else ''!r}; the paths are "
                           f"{', '.join(PATH_NAMES)}.")  # fmt: skip
    if runs < 1 or target.min_repeat < 2 or not target.passages:
        raise MeasureError("The benchmark needs --runs >= 1, 2+ rounds and fixed passages.")


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
    paths: Sequence[str] = PATH_NAMES,
    calibrate: bool = True,
) -> BenchResult:
    """Every scenario `runs` times on each of its `paths`, after calibrating the host
    (unless not `calibrate`); the engine ends on its original flags, always."""
    _validate(scenarios, runs, target, paths)
    chosen = [SCENARIOS[n] for n in dict.fromkeys(scenarios)]
    service = session.service
    facts = await session.facts(refresh=True)
    original = dict((await service.current_config()).flags)
    # Every change is computed and planned before anything runs (a refused flag fails here).
    planned = {s.name: s.changes(session.engine, original) for s in chosen if s.changes}
    for changes in planned.values():
        await service.plan(changes)
    points = sorted({p for s in chosen for p in (s.before, s.after)})
    contexts = sorted({p.context for p in points} | {SHORT, LONG})  # a step line needs two
    kinds = sorted({p.text_type for p in points})
    for c in contexts:
        session.check_fits(facts, c, output_tokens)
    params = {
        "scenarios": [s.name for s in chosen], "runs": runs, "output_tokens": output_tokens,
        "sample_target": target.as_dict(), "sweep_contexts": contexts, "paths": list(paths),
        "sweep_text_types": kinds, "seed": seed, "model": "refitted every run from its own sweep",
        "changes": planned, "sweep_passages": max(SWEEP_PASSAGES, target.passages or 1),
        "own_requests": OWN_REQUESTS,
    }  # fmt: skip
    side = target.passages or 1
    a_round = len(contexts) * len(kinds) * max(SWEEP_PASSAGES, side) + 2 * len(chosen) * side
    ticker = _Ticker(runs * (a_round * target.max_repeat + 2 * len(chosen) * OWN_REQUESTS), tick)
    last_good_before = await (await service.store()).last_good()
    result = BenchResult([], params, original)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="verdict-bench-") as tmp:
        store = RunStore(Path(tmp) / "history.sqlite")
        bench = _Bench(
            session, chosen, original, contexts, kinds, output_tokens, target, seed, timeout,
            ticker, last_good_before, store, tuple(paths), on_trial,
        )  # fmt: skip
        try:
            if calibrate:
                t0 = time.monotonic()
                bench.calibration = await bench_calibration(
                    session, store, contexts=contexts, output=output_tokens, kinds=kinds,
                    timeout=timeout)  # fmt: skip
                result.params["calibration"] = bench.calibration.as_dict()
                bench.took("calibration (restarts included)", t0)
            for run in range(runs):
                session.note(f"run {run + 1} of {runs}")
                result.trials.extend(await _one_run(bench, run))
        except (asyncio.CancelledError, KeyboardInterrupt):
            result.status = "incomplete"
            raise
        finally:
            result.flags_after, cancelled = await _finish_even_if_cancelled(
                _restore(session, original, last_good_before, timeout)
            )
            result.seconds = time.monotonic() - started
            result.timings = bench.timings
            store.close()
            if cancelled:
                raise asyncio.CancelledError
    return result


async def _one_run(bench: _Bench, run: int) -> list[Trial]:
    """One sweep and every scenario's two sides, its typed and explain verdicts, then its
    `set --baseline` trials; the flags back to the original after each change."""
    session = bench.session
    if not {TYPED, TYPED_OWN, EXPLAIN} & set(bench.paths):  # only set --baseline: no sweep
        return await _baselines_only(bench, run)
    t0 = time.monotonic()
    sweep_samples, sides = await _interleaved(bench, run)
    bench.took("sweep and unchanged sides", t0)
    t0 = time.monotonic()
    await _own_sides(bench, run, sides)
    bench.took("own figures", t0)
    facts = await session.facts(refresh=True)
    host = session.service.profile.name
    noise = from_calibration(bench.calibration) if bench.calibration else None
    sweep = Sweep(tuple(sweep_samples), host, facts.context_limit,
                  source=f"the benchmark's sweep, run {run + 1}", noise_profile=noise)  # fmt: skip
    flagged = [s for s in bench.chosen if s.changes is not None]
    changed = {s.name: s.changes(session.engine, bench.original) for s in flagged}
    t0 = time.monotonic()
    try:
        for s in flagged:
            own = _own_slot(bench, s, run, "after")
            sides[(s.name, "after")], mine = await _after_with_flags(
                session, s, _changed(bench.original, changed[s.name]), changed[s.name],
                output_tokens=bench.output_tokens, target=bench.target, timeout=bench.timeout,
                ticker=bench.ticker, own=own,
            )  # fmt: skip
            if own is not None:
                sides[(s.name, "own-after")] = mine
    finally:
        if flagged:
            await bench.restore()
    bench.took("changed sides (restarts included)", t0)
    trials = await _asked(bench, run, sweep, sides, changed)
    for s in flagged:
        trials += await _apply_trials(bench, s, run, changed[s.name])
    return trials


async def _baselines_only(bench: _Bench, run: int) -> list[Trial]:
    """The `set --baseline` trials alone (they measure their own sides)."""
    out = []
    for s in (s for s in bench.chosen if s.changes is not None):
        changes = s.changes(bench.session.engine, bench.original)
        out += await _apply_trials(bench, s, run, changes)
    return out


async def _apply_trials(
    bench: _Bench, s: Scenario, run: int, changes: dict[str, str | None]
) -> list[Trial]:
    """The scenario's `set --baseline` trials, one per apply path both it and the bench
    ask (default options, A-B, A-B-A-B)."""
    return [bench.emit(await _baseline(bench, s, run, changes, order))
            for order in BASELINE_PATHS if order in s.paths and order in bench.paths]  # fmt: skip


async def _baseline(
    bench: _Bench, s: Scenario, run: int, changes: dict[str, str | None], order: str
) -> Trial:
    t0 = time.monotonic()
    try:
        trial = await baseline_trial(bench.session, s, run, changes, path=order,
                                     timeout=bench.timeout, noise=bench.calibration)  # fmt: skip
        return _with(trial, s.constructed)
    finally:
        await bench.restore()
        bench.took(f"path {order} (restarts included)", t0)


async def _asked(
    bench: _Bench,
    run: int,
    sweep: Sweep,
    sides: dict[tuple[str, str], list[RequestSample]],
    changed: dict[str, dict[str, str | None]],
) -> list[Trial]:
    """The typed and explain verdicts on every scenario's two sides, the sides stored as
    an operator's history would hold them."""
    t0 = time.monotonic()
    session, store = bench.session, bench.store
    where = {"host": session.service.profile.name, "engine": session.engine}
    await store_run(store, **where, flags=bench.original, samples=sweep.samples,
                                kind="sweep", params={"verdict_bench_run": run})  # fmt: skip
    out = []
    for s in bench.chosen:
        before, after = sides[(s.name, "before")], sides[(s.name, "after")]
        flags_after = _changed(bench.original, changed.get(s.name, {}))
        if TYPED in s.paths and TYPED in bench.paths:
            t = typed_trial(s, run, sweep, before, after, seed=bench.seed * 1000 + run)
            out.append(bench.emit(_with(t, s.constructed)))
        if (s.name, "own-before") in sides and (s.name, "own-after") in sides:
            own = (sides[(s.name, "own-before")], sides[(s.name, "own-after")])
            t = await typed_own_trial(s, run, session, sweep, own,
                                      effect=effect_of(before, after),
                                      seed=bench.seed * 1000 + run)  # fmt: skip
            out.append(bench.emit(_with(t, s.constructed)))
        if EXPLAIN in s.paths and EXPLAIN in bench.paths:
            a = await store_run(store, **where, flags=bench.original, samples=before,
                                kind="prompt")  # fmt: skip
            b = await store_run(store, **where, flags=flags_after, samples=after, kind="prompt")
            t = await explain_trial(s, run, store, a, b, seed=bench.seed * 1000 + run)
            out.append(bench.emit(_with(t, s.constructed)))
    bench.took("verdicts (settling runs included)", t0)
    return out


def _with(trial: Trial, constructed: float | None) -> Trial:
    return trial if constructed is None else replace(trial, constructed=constructed)


async def _interleaved(
    bench: _Bench, run: int
) -> tuple[list[RequestSample], dict[tuple[str, str], list[RequestSample]]]:
    """On the original flags: the sweep, both sides of the no-flag scenarios and the
    "before" of the others, interleaved request by request in rounds (every passage of
    every figure once a round), so drift on a shared host falls on the model and on both
    sides alike."""
    session, target = bench.session, bench.target
    points = [Point(k, c) for c in bench.contexts for k in bench.kinds]
    sides: dict[tuple[str, str], list[RequestSample]] = {}
    params = {"contexts": list(bench.contexts), "output_tokens": bench.output_tokens,
              "text_types": list(bench.kinds), "sample_target": target.as_dict(),
              "passages": SWEEP_PASSAGES, "verdict_bench_run": run}  # fmt: skip

    async def read(point: Point, p: int, record: Any = None) -> RequestSample:
        spec = await session.spec(point.text_type, point.context, bench.output_tokens, index=p)
        sample = await session.measure(spec, record)
        bench.ticker.step()
        return sample

    with session.labelled("verdict-bench"):
        async with session.run("context-sweep", params) as record:
            await _warm(session, points, bench.output_tokens)
            for r in range(target.max_repeat):
                for p in range(max(SWEEP_PASSAGES, target.passages or 1)):
                    for point in points:
                        await read(point, p, record)
                    if p >= (target.passages or 1):
                        continue  # the sweep reads more passages than a side
                    for s in bench.chosen:
                        sides.setdefault((s.name, "before"), []).append(await read(s.before, p))
                        if s.changes is None:
                            sides.setdefault((s.name, "after"), []).append(await read(s.after, p))
                by_point: dict[Point, list[RequestSample]] = {}
                for x in record.samples:
                    by_point.setdefault(Point(x.text_type, x.context_tokens), []).append(x)
                figures = [*by_point.values(), *sides.values()]
                if r + 1 >= target.min_repeat and _narrow(figures, target):
                    break
    return list(record.samples), sides


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
    own: list[int] | None = None,
) -> tuple[list[RequestSample], list[RequestSample]]:
    """A flag scenario's "after" side: restart with its flags (through plan + apply, as
    `set` does), then its requests until narrow enough, and the operator's own figure on
    the `own` windows where asked. The caller restores the flags."""
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
        mine = await own_figure(session, s.after.text_type, s.after.context, output_tokens,
                                own) if own is not None else []  # fmt: skip
    return after, mine


def _own_slot(bench: _Bench, s: Scenario, run: int, side: str) -> list[int] | None:
    """The windows of the operator's own figure at a side, where `typed-own` is asked."""
    if TYPED_OWN not in s.paths or TYPED_OWN not in bench.paths:
        return None
    # At one point the operator re-sends their own prompts (`--passages same`): both
    # sides read the same windows; across points the prompts are other passages.
    slot = 2 * bench.chosen.index(s) + (side == "after" and s.before != s.after)
    return own_windows(run, slot)


async def _own_sides(
    bench: _Bench, run: int, sides: dict[tuple[str, str], list[RequestSample]]
) -> None:
    """On the original flags: every scenario's own "before" figure, and the own "after"
    of those that change no flag (`prompt --repeat 3` on passages the sweep never read)."""
    session = bench.session
    for s in bench.chosen:
        for side, point in (("before", s.before), ("after", s.after)):
            windows = _own_slot(bench, s, run, side)
            if windows is None or (side == "after" and s.changes is not None):
                continue
            sides[(s.name, f"own-{side}")] = await own_figure(
                session, point.text_type, point.context, bench.output_tokens, windows
            )
            for _ in windows:
                bench.ticker.step()


def _narrow(figures: Sequence[Sequence[RequestSample]], target: SampleTarget) -> bool:
    """Every figure's pooled tok/s interval (resampled within passages) is narrow enough."""
    return all(narrow_enough(f, target) for f in figures)


async def _warm(session: MeasureSession, points: Sequence[Point], output_tokens: int) -> None:
    """One unrecorded request per point after a (re)start: the first request at a new
    context pays for growing the KV cache and the allocator, which is no part of a step."""
    await methods._warmup(session, points[0].text_type)
    for point in points:
        await session.measure(await session.spec(point.text_type, point.context, output_tokens))
