"""Speculation under load: per-stream and aggregate figures at several concurrencies, with
speculation on and off, and the concurrency at which speculation stops paying.

`run_load` measures each level in waves: N requests of the same text, context and output
length sent at once (each on its own passage, the same passages in both arms), the next
wave when the last reply is in. The speculative arm reads half its waves, the engine
restarts with speculation off through the normal apply path (`breakeven`'s: the parser
checks the command line, last-good is kept, the original flags come back always, Ctrl-C
included), the plain arm reads all of its waves, and after the restore the speculative
arm reads its other half: the arms bracket each other in time (A-B-A), so a slow drift
does not favour one, and the drift left (three quarters of the host's measured one) is in
the speedup's interval.

Under load, counters scraped around one request count the others' tokens too. Engines
that report each request's decode time and verify steps in the reply (ours, SGLang) need
nothing more; vLLM's counters are scraped around each wave instead: the verify steps and the
decode-time histogram's sum between them belong to the wave's requests together
(`load_table.WaveCounters`). Its streams' own clocks are not used under load: the
stream arrives in bursts, and a rate read after the first burst overstates the decode.

The arithmetic is `analysis.load_table`; `specconsole load` and the TUI's Sweeps view
(method "load") both call this.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.analysis.intervals import LEVEL, RESAMPLES
from console.analysis.load_factor import LoadVerdict, judge_load
from console.analysis.load_table import LoadError, LoadTable, WaveCounters, load_table
from console.analysis.noise_profile import ORDER_SHARE
from console.analysis.records import RequestSample, RunInfo
from console.backends import get_adapter
from console.config import FlagValue
from console.experiments.breakeven import (
    ArmProgress,
    bracketed_arms,
    same_flags,
    speculating,
    speculation_off,
)
from console.measure import methods
from console.measure.request_measurement import CATCH_UP_S
from console.measure.session import MeasureError, MeasureSession, RunRecord
from console.sampling import Sampling, comparable
from console.service.engine_client import EngineRequestError, MetricsScrape

if TYPE_CHECKING:
    from console.store import RunStore

METHOD = "load"
LEVELS = (1, 2, 4, 8)
MAX_CONCURRENCY = 64  # more streams than this is a load generator's job, not a probe's

Tick = Callable[[int, int], None]


def check_levels(levels: Sequence[int]) -> list[int]:
    """The concurrencies in order, refused in one sentence when they cannot be a sweep."""
    if not levels:
        raise MeasureError("--concurrency needs at least one level, e.g. 1,2,4,8.")
    bad = [n for n in levels if not 1 <= n <= MAX_CONCURRENCY]
    if bad:
        raise MeasureError(
            f"Each concurrency must be between 1 and {MAX_CONCURRENCY}, not {bad[0]}."
        )
    return sorted(set(levels))


@dataclass
class LoadResult:
    run_id: int | None
    params: dict[str, Any]
    flags_before: dict[str, FlagValue]
    off_changes: dict[str, str | None]
    table: LoadTable | None = None
    flags_after: dict[str, FlagValue] | None = None
    spec_flags_hash: str = ""
    ar_flags_hash: str = ""
    counted: WaveCounters = field(default_factory=WaveCounters)
    drift_sd: float = 0.0
    drift_source: str = "no drift measured"
    seconds: float = 0.0
    samples: list[RequestSample] = field(default_factory=list)
    status: str = "complete"

    @property
    def restored(self) -> bool:
        return self.flags_after is None or same_flags(self.flags_after, self.flags_before)

    def summary(self) -> dict[str, Any]:
        return {
            **(self.table.as_dict() if self.table else {"rows": [], "breakeven": None}),
            "off_changes": self.off_changes,
            "flags_after": self.flags_after,
            "restored": self.restored,
            "spec_flags_hash": self.spec_flags_hash,
            "ar_flags_hash": self.ar_flags_hash,
            **self.counted.as_summary(),
            "drift_sd": self.drift_sd,
            "drift_source": self.drift_source,
            "seconds": self.seconds,
            "interval": f"{LEVEL:.0%} percentile bootstrap over waves, {RESAMPLES} resamples, "
            f"seed {self.params.get('seed', 0)}; the speedup also carries the drift",
        }

    def as_dict(self) -> dict[str, Any]:
        return {"method": METHOD, "run_id": self.run_id, "status": self.status,
                "params": self.params, "flags_before": self.flags_before,
                **self.summary()}  # fmt: skip


def table_of(samples: Sequence[RequestSample], summary: dict[str, Any], seed: int = 0) -> LoadTable:
    """A stored run's table recomputed from its samples and summary (the history's)."""
    return load_table(
        samples, spec_hash=summary["spec_flags_hash"],
        ar_hash=summary.get("ar_flags_hash") or None,
        counted=WaveCounters.from_summary(summary),
        drift_sd=float(summary.get("drift_sd") or 0.0), seed=seed,
    )  # fmt: skip


async def _scrape(session: MeasureSession) -> MetricsScrape | None:
    try:
        return await (await session.service.client()).metrics()
    except EngineRequestError:
        return None


@dataclass
class _Waves(ArmProgress):
    """Counts progress (a tick a wave) and numbers the waves across the run."""

    next_id: int = 0


async def _wave(
    session: MeasureSession, record: RunRecord, result: LoadResult, waves: _Waves,
    *, concurrency: int, first_passage: int, p: dict[str, Any],
) -> None:  # fmt: skip
    """N requests at once, each on its own passage; vLLM's counters around the wave."""
    adapter = get_adapter(session.engine)
    stream = adapter.scrapes_around_requests  # no decode time in the reply: from the stream
    wave_id, waves.next_id = waves.next_id, waves.next_id + 1
    specs = [
        await session.spec(
            p["text_type"],
            p["context"],
            p["output_tokens"],
            index=first_passage + j,
            stream=stream,
        )
        for j in range(concurrency)
    ]
    before = await _scrape(session) if stream else None
    samples = await asyncio.gather(*(
        session.measure(spec, record, concurrency=concurrency, wave=wave_id) for spec in specs
    ))  # fmt: skip
    if stream:
        tokens = sum(s.completion_tokens for s in samples)
        after = await _scrape(session)
        for pause in CATCH_UP_S:  # counters are recorded after the replies leave
            if adapter.counters_caught_up(before, after, tokens):
                break
            await asyncio.sleep(pause)
            after = await _scrape(session)
        steps = adapter.verify_steps_between(before, after)
        if steps:
            result.counted.steps[wave_id] = steps
        decode = adapter.decode_seconds_between(before, after)
        if decode:
            result.counted.decode_s[wave_id] = decode
    waves.step()


async def _arm(
    session: MeasureSession, record: RunRecord, result: LoadResult, waves: _Waves,
    label: str, wave_indices: Sequence[int], p: dict[str, Any],
) -> str:  # fmt: skip
    """One arm's waves `wave_indices` at every level; its flags hash. The action slot is
    held per arm, so the restart between the arms can take it."""
    async with session.service.action(f"a load run ({label})"):
        facts = await session.facts(refresh=True)
        if not wave_indices:
            return facts.flags_hash
        levels = ", ".join(map(str, p["concurrency"]))
        session.note(f"measuring with {label} at concurrency {levels}")
        await methods._warmup(session, p["text_type"])
        for w in wave_indices:
            for n in p["concurrency"]:
                # The same passages in both arms: wave w at level n reads n of them.
                await _wave(session, record, result, waves, concurrency=n,
                            first_passage=w * n, p=p)  # fmt: skip
        return facts.flags_hash


async def run_load(
    session: MeasureSession,
    *,
    concurrency: Sequence[int] = LEVELS,
    context: int = 512,
    text_type: str = "code",
    output_tokens: int = 64,
    waves: int = 3,
    spec_only: bool = False,
    seed: int = 0,
    timeout: float = 600.0,
    tick: Tick | None = None,
) -> LoadResult:
    """Measure every level with speculation on (and off, unless `spec_only` or the engine
    does not speculate), restore the flags always, and tabulate."""
    levels = check_levels(concurrency)
    if waves < 1:
        raise MeasureError(f"--waves must be at least 1, not {waves}.")
    service = session.service
    engine = service.profile.engine
    facts = await session.facts(refresh=True)
    session.check_fits(facts, context, output_tokens)
    session.library.text(text_type)  # an unknown type fails before anything restarts
    original = dict((await service.current_config()).flags)
    both = not spec_only and speculating(engine, original)
    off_changes = speculation_off(engine, original) if both else {}
    plan_off = await service.plan(off_changes) if both else None  # refused before anything runs
    last_good_before = await (await service.store()).last_good() if both else None
    params = {"concurrency": levels, "context": context, "text_type": text_type,
              "output_tokens": output_tokens, "waves": waves, "seed": seed,
              "arms": "on and off" if both else "as configured",
              "sampling": session.sampling.label}  # fmt: skip
    info = RunInfo(host=service.profile.name, engine=engine, method=METHOD, params=params,
                   flags=facts.flags, engine_version=facts.version,
                   sampling=session.sampling.as_dict())  # fmt: skip
    result = LoadResult(None, params, original, off_changes)
    if both and session.store is not None:
        profile = await session.store.noise_profile(service.profile.name)
        if profile is not None:
            result.drift_sd = profile.drift_sd * math.sqrt(ORDER_SHARE["A-B-A-B"])
            result.drift_source = f"this host's calibration ({len(profile.shifts)} shifts)"
    started = time.monotonic()
    counter = _Waves(waves * len(levels) * (2 if both else 1), tick)
    first_half = [w for w in range(waves) if w % 2 == 0]
    second_half = [w for w in range(waves) if w % 2 == 1]
    async with session.recorded(info) as record:
        result.run_id = record.run_id

        async def arm(label: str, indices: Sequence[int]) -> str:
            return await _arm(session, record, result, counter, label, indices, params)

        try:
            if not both:
                result.spec_flags_hash = await arm("the configured flags", range(waves))
            else:
                await bracketed_arms(
                    session, plan_off, result, arm, before=first_half, off=range(waves),
                    after=second_half, last_good_before=last_good_before, timeout=timeout,
                )  # fmt: skip
            result.table = _tabulate(record.samples, result, seed)
        finally:
            result.seconds = time.monotonic() - started
            result.samples = list(record.samples)
            record.summary = result.summary()
    result.status = record.status
    return result


def _tabulate(samples: Sequence[RequestSample], result: LoadResult, seed: int) -> LoadTable:
    try:
        return load_table(
            samples, spec_hash=result.spec_flags_hash, ar_hash=result.ar_flags_hash or None,
            counted=result.counted, drift_sd=result.drift_sd, seed=seed,
        )  # fmt: skip
    except LoadError as exc:
        raise MeasureError(str(exc)) from None


async def typed_load_verdict(
    store: RunStore, host: str, flags_hash: str, *, observed: float, at_n: int,
    baseline: float, from_n: int = 1, observed_requests: int = 1, baseline_requests: int = 1,
    sampling: Sampling | None = None,
) -> LoadVerdict:  # fmt: skip
    """A typed pair across concurrencies read through the newest complete load run of
    `host` on these flags (`load_factor.judge_load`); a LoadError in one sentence when
    there is none to read it through, or when it ran at other sampling than `sampling`
    (acceptance, and so the factor, depends on it)."""
    run = await store.latest(host, METHOD, flags_hash=flags_hash)
    if run is None or not (run.summary or {}).get("spec_flags_hash"):
        raise LoadError(
            f"No stored load run for {host} on the flags in force: run `specconsole load "
            f"{host} --concurrency {min(from_n, at_n)},{max(from_n, at_n)}` first; the load "
            "factor is measured there."
        )
    measured = run.info.sampling_settings
    if sampling is not None and not comparable(measured, sampling):
        raise LoadError(
            f"The newest load run ({run.id}) was measured at {measured.label} and these "
            f"figures are read at {sampling.label}: run `load` at the same sampling, or "
            "pass the sampling the figures were read at (--temperature and the rest)."
        )
    p = run.info.params
    source = f"load run {run.id}, {p.get('text_type')} at context {p.get('context')}"
    return judge_load(
        run.requests, spec_hash=run.summary["spec_flags_hash"], observed=observed, at_n=at_n,
        baseline=baseline, from_n=from_n, observed_requests=observed_requests,
        baseline_requests=baseline_requests, source=source,
        seed=int(p.get("seed", 0)),
    )  # fmt: skip
