"""Break-even table: at each context, does speculation still pay, and by how much?

Speculation pays while one round commits more tokens than a plain step could produce in
the same time. With `ar_step` the engine's step time with speculation off (one token a
step) and `spec_step` its round time with speculation on, the commit length needed to
break even is `spec_step / ar_step`; the speedup is the measured commit over that,
`commit / needed`, which is exactly spec tok/s / AR tok/s. Both step times grow with
context, at different rates (the drafter and the tree add work that scales with the KV
cache), so the needed commit moves with context while acceptance usually falls: the
context where the two cross is where speculation stops paying.

`run_breakeven` measures both arms on the same prompts: first with the engine's own
flags, then with speculation switched off through the normal apply path
(`EngineService.plan` + `apply`: the engine's parser checks the command line, last-good
is kept, a failed start is marked), then with the original flags restored the same way,
always (errors and Ctrl-C included); with `repeat` of 2 or more, half of the
speculative requests are taken after the restore, so the two arms bracket each other in
time and slow drift on a shared machine does not favour one. Figures are pooled per
context (sum of tokens / sum of steps / sum of decode time), with bootstrap intervals
over requests (seeded, so a stored run reproduces its own intervals).

Which flag switches speculation off, per engine:
  builtin  `speculative-algorithm=NONE` (its plain autoregressive decoder)
  sglang   every `speculative-*` flag unset: SGLang decodes without speculation when
           `--speculative-algorithm` is not given, and the drafter flags go with it
  vllm     `speculative-config` unset (and the older `speculative-model` /
           `num-speculative-tokens` where a profile still uses them)
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from console.analysis import breakeven_table as _table
from console.analysis.breakeven_table import (  # noqa: F401  (the names callers import)
    BreakevenRow,
    Pooled,
    pays_summary,
    pool,
    stored_rows,
    table_lines,
)
from console.analysis.intervals import LEVEL, RESAMPLES
from console.analysis.records import RequestSample, RunInfo
from console.backends import EngineAdapter, UnknownEngine, get_adapter
from console.config import FlagValue
from console.measure import methods
from console.measure.session import MeasureError, MeasureSession, RunRecord

METHOD = "breakeven"

Tick = Callable[[int, int], None]
T = TypeVar("T")


# -- which flags switch speculation off ------------------------------------------------------


def _adapter(engine: str) -> EngineAdapter:
    try:
        return get_adapter(engine)
    except UnknownEngine:
        raise MeasureError(
            f"Break-even does not know how to switch speculation off on {engine}."
        ) from None


def speculating(engine: str, flags: dict[str, FlagValue]) -> bool:
    """Whether an engine with these flags decodes speculatively (its adapter says)."""
    return _adapter(engine).speculating(flags)


def speculation_off(engine: str, flags: dict[str, FlagValue]) -> dict[str, str | None]:
    """The flag changes (`None` unsets) that turn speculation off on this engine."""
    if not speculating(engine, flags):
        raise MeasureError(
            "Speculation is already off with these flags, so there is nothing to break even "
            "against; turn it on first (e.g. `specconsole set HOST speculative-algorithm=...`)."
        )
    return _adapter(engine).speculation_off(flags)


def _raw(value: FlagValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _as_typed(flags: dict[str, FlagValue]) -> dict[str, str]:
    return {k: _raw(v) for k, v in flags.items()}


def same_flags(a: dict[str, FlagValue], b: dict[str, FlagValue]) -> bool:
    """The same command line: a profile's `max-model-len = "2048"` and the 2048 a plan
    parsed it into are one flag."""
    return _as_typed(a) == _as_typed(b)


def restore_changes(
    current: dict[str, FlagValue], original: dict[str, FlagValue]
) -> dict[str, str | None]:
    """The changes that take `current` back to `original`: unset what was added, set
    what differs (as typed: a plan's 2048 is the profile's "2048")."""
    now = _as_typed(current)
    changes: dict[str, str | None] = {k: None for k in current if k not in original}
    changes.update({k: v for k, v in _as_typed(original).items() if now.get(k) != v})
    return changes


# -- the arithmetic (console/analysis/breakeven_table.py) ------------------------------------


def breakeven_row(context: int, spec: Sequence[RequestSample], ar: Sequence[RequestSample],
                  **kwargs: Any) -> BreakevenRow:  # fmt: skip
    """`breakeven_table.breakeven_row`, its refusal a `MeasureError` as before."""
    try:
        return _table.breakeven_row(context, spec, ar, **kwargs)
    except _table.BreakevenError as exc:
        raise MeasureError(str(exc)) from None


def breakeven_rows(samples: Sequence[RequestSample], **kwargs: Any) -> list[BreakevenRow]:
    """`breakeven_table.breakeven_rows`, its refusal a `MeasureError` as before."""
    try:
        return _table.breakeven_rows(samples, **kwargs)
    except _table.BreakevenError as exc:
        raise MeasureError(str(exc)) from None


# -- the run ---------------------------------------------------------------------------------


@dataclass
class BreakevenResult:
    run_id: int | None
    rows: list[BreakevenRow]
    flags_before: dict[str, FlagValue]
    flags_off: dict[str, FlagValue]
    flags_after: dict[str, FlagValue] | None
    off_changes: dict[str, str | None]
    params: dict[str, Any]
    seconds: float
    samples: list[RequestSample] = field(default_factory=list)
    status: str = "complete"
    spec_flags_hash: str = ""
    ar_flags_hash: str = ""

    @property
    def restored(self) -> bool:
        return self.flags_after is not None and same_flags(self.flags_after, self.flags_before)

    def summary(self) -> dict[str, Any]:
        return {
            "rows": [r.as_dict() for r in self.rows],
            "off_changes": self.off_changes,
            "flags_off": self.flags_off,
            "flags_after": self.flags_after,
            "restored": self.restored,
            "spec_flags_hash": self.spec_flags_hash,
            "ar_flags_hash": self.ar_flags_hash,
            "seconds": self.seconds,
            "interval": f"{LEVEL:.0%} percentile bootstrap over requests, "
            f"{RESAMPLES} resamples, seed {self.params.get('seed', 0)}",
            "pooled": "sum of tokens / sum of steps / sum of decode time per context and arm",
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": METHOD,
            "run_id": self.run_id,
            "status": self.status,
            "params": self.params,
            "flags_before": self.flags_before,
            **self.summary(),
        }


@dataclass
class ArmProgress:
    total: int
    tick: Tick | None
    done: int = 0

    def step(self) -> None:
        self.done += 1
        if self.tick:
            self.tick(self.done, self.total)


async def _measure_arm(
    session: MeasureSession,
    record: RunRecord,
    label: str,
    indices: Sequence[int],
    *,
    contexts: Sequence[int],
    text_type: str,
    output_tokens: int,
    progress: ArmProgress,
) -> str:
    """One arm's requests (the repeats `indices` at every context); its flags hash.

    The action slot is held per arm, not per run, so `apply` can restart the engine
    between the arms."""
    async with session.service.action(f"a breakeven run ({label})"):
        arm_facts = await session.facts(refresh=True)
        if not indices:
            return arm_facts.flags_hash
        session.note(f"measuring with {label} at contexts {', '.join(map(str, contexts))}")
        await methods._warmup(session, text_type)
        for r in indices:
            for context in contexts:
                # passage r is read once per arm: the same seed on both arms (paired)
                spec = await session.spec(text_type, context, output_tokens, index=r, read=0)
                await session.measure(spec, record)
                progress.step()
        return arm_facts.flags_hash


async def run_breakeven(
    session: MeasureSession,
    *,
    contexts: Sequence[int],
    output_tokens: int = 128,
    text_type: str = "code",
    repeat: int = 3,
    seed: int = 0,
    timeout: float = 600.0,
    tick: Tick | None = None,
) -> BreakevenResult:
    """Measure both arms at each context and restore the engine's flags, always."""
    if repeat < 1:
        raise MeasureError(f"--repeat must be at least 1, not {repeat}.")
    service = session.service
    engine = service.profile.engine
    facts = await session.facts(refresh=True)
    for context in contexts:
        session.check_fits(facts, context, output_tokens)
    session.library.text(text_type)  # an unknown type fails before anything restarts
    original = dict((await service.current_config()).flags)
    off_changes = speculation_off(engine, original)
    plan_off = await service.plan(off_changes)  # refused here, before anything runs
    launch = await service.store()
    last_good_before = await launch.last_good()
    params = {
        "contexts": list(contexts),
        "output_tokens": output_tokens,
        "text_type": text_type,
        "repeat": repeat,
        "seed": seed,
        "off_changes": off_changes,
        "sampling": session.sampling.label,
    }
    info = RunInfo(
        host=service.profile.name, engine=engine, method=METHOD, params=params,
        flags=facts.flags, engine_version=facts.version, sampling=session.sampling.as_dict(),
    )  # fmt: skip
    started = time.monotonic()
    progress = ArmProgress(2 * len(contexts) * repeat, tick)
    before = [r for r in range(repeat) if r % 2 == 0]
    after = [r for r in range(repeat) if r % 2 == 1]
    async with session.recorded(info) as record:

        async def arm(label: str, indices: Sequence[int]) -> str:
            return await _measure_arm(
                session, record, label, indices,
                contexts=contexts, text_type=text_type, output_tokens=output_tokens,
                progress=progress,
            )  # fmt: skip

        result = BreakevenResult(
            run_id=record.run_id, rows=[], flags_before=original,
            flags_off=dict(plan_off.new.flags), flags_after=None, off_changes=off_changes,
            params=params, seconds=0.0,
        )  # fmt: skip
        try:
            await bracketed_arms(
                session, plan_off, result, arm, before=before, off=range(repeat), after=after,
                last_good_before=last_good_before, timeout=timeout,
            )  # fmt: skip
            result.rows = breakeven_rows(
                record.samples, spec_hash=result.spec_flags_hash,
                ar_hash=result.ar_flags_hash, seed=seed,
            )  # fmt: skip
        finally:
            # What the run store keeps, whatever ended the block (`recorded` marks it).
            result.seconds = time.monotonic() - started
            result.samples = list(record.samples)
            record.summary = result.summary()
    result.status = record.status
    return result


async def bracketed_arms(
    session: MeasureSession, plan_off: Any, result: Any,
    arm: Callable[[str, Sequence[int]], Awaitable[str]], *, before: Sequence[int],
    off: Sequence[int], after: Sequence[int], last_good_before: Any, timeout: float,
) -> None:  # fmt: skip
    """Speculation on (the repeats `before`), off (`off`) and on again after the restore
    (`after`): the arms bracket each other in time. `arm(label, indices)` measures one
    and returns its flags hash; `result` gets both arms' hashes and the flags after."""
    result.spec_flags_hash = await arm("speculation on", before)
    await off_arm_then_restore(
        session, plan_off, result, lambda: arm("speculation off", off),
        last_good_before=last_good_before, timeout=timeout,
    )  # fmt: skip
    if after:
        await arm("speculation on, after the restore", after)


async def off_arm_then_restore(
    session: MeasureSession,
    plan_off: Any,
    result: BreakevenResult,
    measure_off: Callable[[], Awaitable[str]],
    *,
    last_good_before: Any,
    timeout: float,
) -> None:
    """Restart with speculation off, measure, and restore the original flags, always;
    `result` gets the off arm's flags hash and the flags found after the restore."""
    service, original = session.service, result.flags_before
    try:
        changes = ", ".join(f"{k}={'' if v is None else v}" for k, v in result.off_changes.items())
        session.note(f"restarting {service.profile.name} with speculation off ({changes})")
        applied = await service.apply(plan_off, timeout=timeout)
        if not applied.ok:
            raise MeasureError(
                f"The engine did not come up with speculation off "
                f"({applied.event.describe()}); its original flags are being restored."
            )
        result.ar_flags_hash = await measure_off()
    finally:
        result.flags_after, cancelled = await _finish_even_if_cancelled(
            _restore(session, original, last_good_before, timeout)
        )
        if cancelled:
            raise asyncio.CancelledError
    if not same_flags(result.flags_after, original):
        raise MeasureError(
            f"The engine's flags after the run are not its original ones "
            f"({result.flags_after} instead of {original}); check `specconsole flags "
            f"{service.profile.name}` and `specconsole rollback {service.profile.name}`."
        )


async def _finish_even_if_cancelled(coro: Coroutine[Any, Any, T]) -> tuple[T, bool]:
    """Run `coro` to its end even if this task is cancelled meanwhile (Ctrl-C lands during
    the restore as easily as before it); returns its result and whether a cancellation
    came, for the caller to pass on. A second Ctrl-C still stops the process (asyncio
    raises KeyboardInterrupt then)."""
    task = asyncio.ensure_future(coro)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.cancelled():
                raise
            cancelled = True
    return result, cancelled


async def _restore(
    session: MeasureSession,
    original: dict[str, FlagValue],
    last_good_before: Any,
    timeout: float,
) -> dict[str, FlagValue]:
    """Put the original flags back through plan + apply; roll back if that fails; keep
    the last-good config the operator had before the run. Returns the flags after."""
    service = session.service
    current = dict((await service.current_config()).flags)
    if not same_flags(current, original):
        session.note(
            f"restoring the original flags on {service.profile.name} (a second Ctrl-C "
            f"abandons this; `specconsole rollback {service.profile.name}` then restores them)"
        )
        plan = await service.plan(restore_changes(current, original))
        if same_flags(dict(plan.new.flags), original):
            # The engine's parser read a profile's "2048" as 2048: launch the original's
            # own spelling (the same command line), so the arm after the restore carries
            # the first arm's flags hash and is pooled with it.
            plan = dataclasses.replace(plan, new=service.config_for(original))
        result = await service.apply(plan, timeout=timeout)
        if not result.ok:
            session.note(
                f"the original flags did not come up ({result.event.describe()}); rolling back"
            )
            await service.rollback(timeout=timeout)
    # The restore's apply made the speculation-off config last-good; a rollback after
    # this run must go where it went before the run (or, with no last-good then, stay on
    # the original flags).
    launch = await service.store()
    config = await service.current_config()
    if same_flags(dict(config.flags), original):
        await launch.write_last_good(last_good_before or config)
    return dict(config.flags)
