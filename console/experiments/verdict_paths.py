"""The operator's own paths, as `bench verdict` asks them: no lab protocol of its own.

- `typed`: the two sides' pooled tok/s typed into the same function `diagnose --observed
  B --baseline A` calls (`verdict.typed_verdict`), at their prompt lengths, each the
  median of as many requests as it pooled, against the stored sweep.
- `typed-own`: the operator's own figures (`prompt --repeat 3` on passages the sweep
  never read, `own_figures`) typed into `diagnose` with its default `--passages own`;
  when that answer is "not enough evidence" and offers the settling run, the settling
  run as offered (`diagnose --settle`'s own function), whose answer is the trial's.
- `explain`: the sweep and both sides stored as runs in a history store of the bench's
  own (a temporary SQLite file, so the operator's history is untouched), then
  `history explain A B`'s own function (`explain.explain_runs`).
- `baseline`, `baseline A-B`, `baseline A-B-A-B`: the flag change through `set
  --baseline`'s own function (`baseline.apply_with_baseline`): default options (side by
  side where the host holds both engines), `--order A-B`, and `--bracket`, with the
  host's calibration as its drift term (what a calibrated host's history holds), scored
  the way an operator reads its table: a row whose tok/s, commit or step time change is
  a finding is "not physics", every row within noise is "physics".

The benchmark calibrates the host once, first (`bench_calibration`), into its own store,
as `specconsole calibrate` would: typed figures then carry its noise and drift, as
`diagnose` gives them on a calibrated host, and `history explain` its drift.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from console.analysis.intervals import pool, usable
from console.analysis.noise_profile import NoiseProfile as Calibration
from console.analysis.records import RequestSample, RunInfo
from console.analysis.verdict import Sweep, typed_verdict
from console.analysis.verdict_scoring import Trial
from console.analysis.verdict_split import window
from console.config import FlagValue
from console.experiments.baseline import BaselinePlan, apply_with_baseline
from console.experiments.calibrate import ROUNDS, calibrate
from console.experiments.explain import explain_runs
from console.experiments.own_figures import typed_figure
from console.experiments.settle import settle
from console.measure.session import MeasureSession
from console.store import RunStore
from console.store.runs import StoredRun


def tok_s(samples: Sequence[RequestSample]) -> float | None:
    """Pooled decode tok/s (tokens / decode time): steps are not needed, so it holds for
    an autoregressive side too."""
    ok = [s for s in samples if s.ok and s.decode_time_s and s.completion_tokens > 1]
    seconds = sum(s.decode_time_s or 0.0 for s in ok)
    return sum(s.completion_tokens - 1 for s in ok) / seconds if seconds else None


def effect_of(before: Sequence[RequestSample], after: Sequence[RequestSample]) -> float | None:
    b, a = tok_s(before), tok_s(after)
    return a / b - 1 if a and b else None


async def store_run(
    store: RunStore,
    *,
    host: str,
    engine: str,
    flags: dict[str, FlagValue],
    samples: Sequence[RequestSample],
    kind: str,
    params: dict[str, Any] | None = None,
) -> StoredRun:
    """`samples` as one complete run of `kind` ("sweep" is what explain fits a model
    from), as `specconsole sweep` or `prompt` would have stored them."""
    method = {"sweep": "context-sweep"}.get(kind, "probe")
    info = RunInfo(host=host, engine=engine, method=method, params=params or {},
                   flags=dict(flags), kind=kind)  # fmt: skip
    run_id = await store.start_run(info)
    for s in samples:
        await store.add_request(run_id, s)
    await store.finish_run(run_id, "complete")
    return await store.run(run_id)


def typed_trial(
    scenario: Any,
    run: int,
    sweep: Sweep,
    before: Sequence[RequestSample],
    after: Sequence[RequestSample],
    *,
    seed: int,
) -> Trial:
    """What `diagnose --observed B --context .. --baseline A --baseline-context ..
    --passages sweep` says when the operator types the two sides' figures: the bench
    measures both sides on the sweep's own passages, so it says so (the default reads
    typed figures as the operator's own traffic, held out from the sweep)."""
    started = time.monotonic()
    b, a = usable(before), usable(after)
    effect = effect_of(before, after)
    if not a or not b:
        return _no_figure(scenario, run, effect, "typed")
    j = typed_verdict(
        sweep, pool(a).tok_s, scenario.after.context, scenario.after.text_type,
        output=a[0].max_tokens, requests=len(a),
        baseline=pool(b).tok_s, baseline_prompt=scenario.before.context,
        baseline_text=scenario.before.text_type, baseline_output=b[0].max_tokens,
        baseline_requests=len(b), seed=seed, held_out=False,
        windows=sorted({window(s) for s in (*a, *b)}),  # the sides' windows, read in rounds
    )  # fmt: skip
    return Trial(scenario.name, run, scenario.truth, j.outcome, effect, j.headline,
                 j.as_dict(), "typed", time.monotonic() - started)  # fmt: skip


def same_prompts(before: Sequence[RequestSample], after: Sequence[RequestSample]) -> bool:
    """Whether the two own figures re-sent the same prompts (`--passages same`)."""
    return sorted(s.prompt_id for s in before) == sorted(s.prompt_id for s in after)


async def typed_own_trial(
    scenario: Any,
    run: int,
    session: MeasureSession,
    sweep: Sweep,
    own: tuple[Sequence[RequestSample], Sequence[RequestSample]],
    *,
    effect: float | None,
    seed: int,
) -> Trial:
    """What `diagnose --observed B --baseline A` says on the operator's own figures `own`
    (before, after), and, where it offers one, what the settling run it offers says: the
    operator's next command; at one point the operator re-sent the same prompts and says
    so (`--passages same`). `effect` is the scenario's true effect as the paired sides
    measured it (the own figures' gap holds their passages' spread too)."""
    started = time.monotonic()
    before, after = own
    b, a = typed_figure(before), typed_figure(after)
    if a is None or b is None:
        return _no_figure(scenario, run, effect, "typed-own")
    j = typed_verdict(
        sweep, a, scenario.after.context, scenario.after.text_type,
        output=after[0].max_tokens, requests=len(after), baseline=b,
        baseline_prompt=scenario.before.context, baseline_text=scenario.before.text_type,
        baseline_output=before[0].max_tokens, baseline_requests=len(before), seed=seed,
        same_prompts=same_prompts(before, after),
    )  # fmt: skip
    outcome, headline, record = j.outcome, j.headline, j.as_dict()
    if j.settle is not None:
        settled = await settle(session, j.settle, profile=sweep.noise_profile,
                               limit=sweep.context_limit)  # fmt: skip
        outcome = settled.verdict.outcome
        headline = f"{j.headline} Settled: {settled.verdict.headline}"
        record = {**settled.verdict.as_dict(), "typed": j.as_dict(), "settled": settled.as_dict()}
    return Trial(scenario.name, run, scenario.truth, outcome, effect, headline, record,
                 "typed-own", time.monotonic() - started)  # fmt: skip


async def explain_trial(
    scenario: Any,
    run: int,
    store: RunStore,
    before: StoredRun,
    after: StoredRun,
    *,
    seed: int,
) -> Trial:
    """What `history explain A B` says on the two stored sides."""
    started = time.monotonic()
    effect = effect_of(before.requests, after.requests)
    try:
        explained = await explain_runs(store, before, after, seed=seed)
    except Exception as exc:  # an ExplainError or a side without figures: no verdict
        return Trial(scenario.name, run, scenario.truth, "not enough evidence", effect,
                     f"Not enough evidence: {exc}", {}, "explain")  # fmt: skip
    _label, j = explained.pairs[0]
    return Trial(scenario.name, run, scenario.truth, j.outcome, effect, j.headline,
                 j.as_dict(), "explain", time.monotonic() - started)  # fmt: skip


def _no_figure(scenario: Any, run: int, effect: float | None, path: str) -> Trial:
    return Trial(scenario.name, run, scenario.truth, "not enough evidence", effect,
                 "Not enough evidence: a side has no usable request.", {}, path)  # fmt: skip


def baseline_outcome(rows: Sequence[Any]) -> tuple[str, str]:
    """`set --baseline`'s table read the way an operator reads it: a row whose own verdict
    is "not physics" (the one reading, `answer`) makes the table "not physics"; else a row
    whose own verdict cannot tell makes it "not enough evidence"; otherwise "physics"."""
    if not rows:
        return "not enough evidence", "Not enough evidence: the baseline compared no point."
    moved = []
    for r in rows:
        if r.verdict is None or r.verdict.outcome != "not physics":
            continue
        pairs = (("tok/s", r.decode_tok_s), ("commit", r.commit_len), ("step", r.step_time_s))
        found = [f"{label} {p.change_text()}" for label, p in pairs if p.finding]
        moved.append(f"{r.text_type} {r.context}: {', '.join(found)}")
    if moved:
        return "not physics", f"Not physics: {'; '.join(moved)}."
    wide = [f"{r.text_type} {r.context}" for r in rows
            if r.verdict is not None and r.verdict.outcome != "physics"]  # fmt: skip
    if wide:  # the row itself says "too wide to tell" (or too few rounds)
        return "not enough evidence", (f"Not enough evidence: no row moved, but "
                                       f"{', '.join(wide)} too wide to tell.")  # fmt: skip
    return "physics", f"Physics: within noise on every row ({len(rows)} rows)."


ORDER_OF_PATH = {"baseline": None, "baseline-ab": "A-B", "baseline-abab": "A-B-A-B"}


async def bench_calibration(
    session: MeasureSession,
    store: RunStore,
    *,
    contexts: Sequence[int],
    output: int,
    kinds: Sequence[str],
    timeout: float,
) -> Calibration:
    """The host's noise profile at the benchmark's points, measured once into the
    benchmark's own store (`specconsole calibrate`'s own function)."""
    plan = BaselinePlan(tuple(contexts), output, tuple(kinds), repeat=ROUNDS)
    session.note("calibrating the host first (its noise and its drift across a restart)")
    return await calibrate(session.service, store, plan=plan, timeout=timeout,
                           on_note=session.note)  # fmt: skip


async def baseline_trial(
    session: MeasureSession,
    scenario: Any,
    run: int,
    changes: dict[str, str | None],
    *,
    path: str,
    timeout: float,
    noise: Calibration | None = None,
) -> Trial:
    """The change through `set --baseline` as `path` asks it (default options, `--order
    A-B` or `--bracket`), with `noise` as the host's calibration; the caller puts the
    original flags back."""
    started = time.monotonic()
    service = session.service
    plan = await service.plan(changes)
    done = await apply_with_baseline(service, plan, timeout=timeout, store=None,
                                     on_note=session.note, order=ORDER_OF_PATH[path],
                                     noise=noise, calibrate=False)  # fmt: skip
    before = list(done.before.samples) + list(
        done.before_again.samples if done.before_again else ())  # fmt: skip
    after = list(done.after.samples) if done.after else []
    effect = effect_of(before, after)
    if not done.result.ok:
        outcome, headline = "not enough evidence", "Not enough evidence: the change did not apply."
    else:
        outcome, headline = baseline_outcome(done.rows)
    return Trial(scenario.name, run, scenario.truth, outcome, effect, headline,
                 {"rows": [r.as_dict() for r in done.rows], "order": done.order,
                  "notes": list(done.notes)}, path, time.monotonic() - started)  # fmt: skip
