"""The measurement methods: probe, context sweep, output sweep, two-point, stream check.

Each runs inside `MeasureSession.run` (one action at a time on the service, one stored
run, a commit per sample) and returns a `MethodResult`: the samples, per-point summaries
(median and spread over `repeat`), and method-specific figures. Sweeps refuse a point
above the engine's context length before sending anything, and warm the engine up with
one short request that is not recorded, so the first point does not pay for lazy
initialisation.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.decompose import FitError, ThroughputModel, fit
from console.analysis.records import RequestSample
from console.analysis.sample_size import SampleTarget, measure_until_narrow
from console.analysis.stats import PointSummary, summarize
from console.analysis.two_point import stream_figures, two_point_figures
from console.measure.request_measurement import RequestSpec
from console.measure.session import MeasureError, MeasureSession, RunRecord
from console.sampling import Sampling

# A streamed client-side decode rate this far from the engine's non-streamed one is
# distorted. Loopback on a 2-core host reads 10-21% low with the bundled pair (its
# 3.5 ms rounds are short next to the client parsing events on the same two cores); the
# SSH-tunnel trap this exists for reads 3-5x low (-67% to -80%), so 30% separates them
# with room on both sides.
STREAM_TOLERANCE = 0.30

Tick = Callable[[int, int], None]  # (done, total) after each request


@dataclass
class MethodResult:
    method: str
    run_id: int | None
    samples: list[RequestSample]
    points: list[PointSummary]
    figures: dict[str, Any] = field(default_factory=dict)
    model: ThroughputModel | None = None
    status: str = "complete"
    # the sampling its requests were decoded at (`Sampling.as_dict()`; empty: greedy)
    sampling: dict[str, Any] = field(default_factory=dict)

    @property
    def sampling_label(self) -> str:
        return Sampling.from_dict(self.sampling).label

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "run_id": self.run_id,
            "status": self.status,
            "points": [p.as_dict() for p in self.points],
            "figures": self.figures,
            "model": self.model.as_dict() if self.model else None,
            "sampling": {**self.sampling, "label": self.sampling_label},
            "samples": [s.as_dict() for s in self.samples],
        }


def _result(method: str, record: RunRecord, figures: dict[str, Any] | None = None) -> MethodResult:
    return MethodResult(
        method=method,
        run_id=record.run_id,
        samples=list(record.samples),
        points=summarize(record.samples),
        figures=figures or {},
        sampling=dict(record.info.sampling),
    )


async def _warmup(session: MeasureSession, text_type: str) -> None:
    spec = await session.spec(text_type, 16, 8)
    # not recorded (no run record), and not traffic: the live series marks it warm-up
    await session.measure(spec, warmup=True)


async def probe(
    session: MeasureSession,
    *,
    text_type: str = "code",
    context: int | None = None,
    text: str | None = None,
    max_tokens: int = 128,
    ignore_eos: bool = True,
    stream: bool = False,
    repeat: int = 1,
    tick: Tick | None = None,
    first_passage: int = 0,
) -> MethodResult:
    """One request (or `repeat`): a typed prompt, or `context` tokens of a text type, the
    `i`-th repeat reading library window `first_passage + i`."""
    facts = await session.facts()
    if text is None:
        context = context or 256
        session.check_fits(facts, context, max_tokens)
    params = {
        "text_type": text_type if text is None else "custom",
        "context": context,
        "max_tokens": max_tokens,
        "ignore_eos": ignore_eos,
        "stream": stream,
        "repeat": repeat,
        "typed": text is not None,
        "first_passage": first_passage,
    }
    async with session.run("probe", params) as record:
        for i in range(repeat):
            if text is not None:
                spec = session.sampled(RequestSpec(
                    "custom", f"typed#{i}", max_tokens, ignore_eos, stream, text=text
                ))  # fmt: skip
            else:
                spec = await session.spec(
                    text_type, context or 256, max_tokens, index=first_passage + i,
                    stream=stream, ignore_eos=ignore_eos,
                )  # fmt: skip
            await session.measure(spec, record)
            if tick:
                tick(i + 1, repeat)
    return _result("probe", record)


async def context_sweep(
    session: MeasureSession,
    *,
    contexts: Sequence[int],
    output_tokens: int = 128,
    text_types: Sequence[str] = ("code",),
    repeat: int = 1,
    stream: bool = False,
    tick: Tick | None = None,
    target: SampleTarget | None = None,
    prior: Sequence[RequestSample] = (),
    first_index: int = 0,
    min_rounds: int | None = None,
    max_rounds: int | None = None,
    rounds: dict[tuple[str, int], int] | None = None,
) -> MethodResult:
    """Fixed output, exact prompt lengths: step time against context, commit by text type.

    Points are interleaved (every context and type once, then again for each repeat), so
    drift on a busy machine spreads over all points instead of biasing one.

    With `target`, `repeat` is ignored: rounds go on until each point's pooled tok/s
    interval is narrow enough (`sample_size`), counting `prior` requests of the same
    points (an earlier block of the same condition); `first_index` numbers the passages
    this block reads, `min_rounds` / `max_rounds` bound its whole rounds (every passage of
    a point once per round) and `rounds` fixes them per point (`sample_size`)."""
    facts = await session.facts()
    for context in contexts:
        session.check_fits(facts, context, output_tokens)
    for kind in text_types:
        session.library.text(kind)  # an unknown type fails before the run starts
    plan = target or SampleTarget.fixed(repeat)
    params: dict[str, Any] = {
        "contexts": list(contexts),
        "output_tokens": output_tokens,
        "text_types": list(text_types),
        "repeat": repeat,
        "stream": stream,
    }
    if target is not None:
        params.update(sample_target=target.as_dict(), first_index=first_index)
    # Every context of a round before the next round; within a context, every type.
    points = [(kind, context) for context in contexts for kind in text_types]
    total = len(points) * plan.max_rounds * (plan.passages or 1)
    await _warmup(session, text_types[0])
    async with session.run("context-sweep", params) as record:
        done = 0

        async def measure(point: tuple[str, int], index: int) -> RequestSample:
            nonlocal done
            kind, context = point
            # seeded by the point's request number, which runs on across the blocks of a
            # side (`first_index`), so no two reads of a passage on one side share a seed
            spec = await session.spec(
                kind, context, output_tokens, index=plan.passage(index), stream=stream,
                read=index,
            )  # fmt: skip
            sample = await session.measure(spec, record)
            done += 1
            if tick:
                tick(done, total)
            return sample

        size = await measure_until_narrow(
            points, measure, plan, prior=prior, first_index=first_index, min_rounds=min_rounds,
            max_rounds=max_rounds, rounds=rounds,
        )  # fmt: skip
        result = _result("context-sweep", record)
        result.figures["sample_size"] = size.as_dict()
        try:
            result.model = fit(record.samples)
            record.summary = {"model": result.model.as_dict()}
        except FitError as exc:
            result.figures["fit_error"] = str(exc)
    return result


async def output_sweep(
    session: MeasureSession,
    *,
    outputs: Sequence[int],
    context: int = 256,
    text_types: Sequence[str] = ("code",),
    repeat: int = 1,
    tick: Tick | None = None,
) -> MethodResult:
    """Fixed prompt, several output lengths: does decode slow down as output grows?"""
    facts = await session.facts()
    for n in outputs:
        session.check_fits(facts, context, n)
    params = {"outputs": list(outputs), "context": context, "text_types": list(text_types),
              "repeat": repeat}  # fmt: skip
    total = len(outputs) * len(text_types) * repeat
    await _warmup(session, text_types[0])
    async with session.run("output-sweep", params) as record:
        done = 0
        for r in range(repeat):
            for n in outputs:
                for kind in text_types:
                    await session.measure(await session.spec(kind, context, n, index=r), record)
                    done += 1
                    if tick:
                        tick(done, total)
    return _result("output-sweep", record)


async def two_point(
    session: MeasureSession,
    *,
    n1: int = 32,
    n2: int = 160,
    context: int = 256,
    text_type: str = "code",
    repeat: int = 3,
    tick: Tick | None = None,
) -> MethodResult:
    """Decode rate as (N2 - N1) / (T(N2) - T(N1)) on the same prompt, not streamed.

    Prefill, the round trip and the first N1 tokens cancel in the difference (greedy
    decoding makes the first N1 tokens of both runs identical), so this needs nothing from
    the server; the server's own decode rate of the N2 request is kept beside it."""
    if not 1 <= n1 < n2:
        raise MeasureError(f"Two-point needs 1 <= N1 < N2, not N1={n1}, N2={n2}.")
    facts = await session.facts()
    session.check_fits(facts, context, n2)
    params = {"n1": n1, "n2": n2, "context": context, "text_type": text_type, "repeat": repeat}
    await _warmup(session, text_type)
    async with session.run("twopoint", params) as record:
        for r in range(repeat):
            await session.measure(await session.spec(text_type, context, n1), record)
            await session.measure(await session.spec(text_type, context, n2), record)
            if tick:
                tick(r + 1, repeat)
        figures = two_point_figures(record.samples, n1, n2)
        record.summary = figures
    return _result("twopoint", record, figures)


async def stream_check(
    session: MeasureSession,
    *,
    context: int = 256,
    max_tokens: int = 128,
    text_type: str = "code",
    repeat: int = 3,
    tick: Tick | None = None,
) -> MethodResult:
    """The same request streamed and not: does this link distort streamed figures?

    Over an SSH tunnel every SSE event pays the round trip, so a streamed client-side
    decode rate can read far below the engine's (the field's 29 tok/s that was really
    ~150). Compares the stream's client-side decode rate with the server's figure for
    the same request and with the non-streamed request's server figure."""
    facts = await session.facts()
    session.check_fits(facts, context, max_tokens)
    params = {"context": context, "max_tokens": max_tokens, "text_type": text_type,
              "repeat": repeat}  # fmt: skip
    await _warmup(session, text_type)
    async with session.run("streamcheck", params) as record:
        for r in range(repeat):
            await session.measure(await session.spec(text_type, context, max_tokens), record)
            spec = await session.spec(text_type, context, max_tokens, stream=True)
            await session.measure(spec, record)
            if tick:
                tick(r + 1, repeat)
        figures = stream_figures(record.samples, STREAM_TOLERANCE)
        record.summary = figures
    return _result("streamcheck", record, figures)


def median_of(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
