"""The operator's own figures, as `bench verdict`'s `typed-own` path takes them.

An operator who asks "it was 138, now it is 32" typed two figures from `prompt --repeat
3`: the median of three requests, on prompts the sweep never read. This module measures
such a figure at a scenario's side: `OWN_REQUESTS` requests, one passage each, on windows
outside the sweep's (`MODEL_PASSAGES` on). Every (run, side) reads windows of its own,
rotating over the library's held-out windows, so the trials of one benchmark draw
different passages rather than the same few every run.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from console.analysis.records import RequestSample
from console.analysis.repeat_rule import MODEL_PASSAGES
from console.measure.prompts import WINDOWS
from console.measure.session import MeasureSession

OWN_REQUESTS = 3  # `prompt --repeat 3`, as the field reports' operator typed them
HELD_OUT = WINDOWS - MODEL_PASSAGES  # the windows a figure may read that no sweep reads


def own_windows(run: int, slot: int, n: int = OWN_REQUESTS) -> list[int]:
    """The windows side `slot` of run `run` reads: `n` distinct held-out windows, the
    next `n` for the next slot, wrapping round the held-out ones (a run's slots move on
    by a prime stride, so runs do not repeat each other's draw)."""
    start = run * 17 + slot * n
    return [MODEL_PASSAGES + (start + i) % HELD_OUT for i in range(n)]


async def own_figure(
    session: MeasureSession, text_type: str, context: int, output: int, windows: Sequence[int]
) -> list[RequestSample]:
    """One request on each of `windows` at the point: what `prompt --repeat` returns."""
    out = []
    for index in windows:
        spec = await session.spec(text_type, context, output, index=index)
        out.append(await session.measure(spec, None))
    return out


def typed_figure(samples: Sequence[RequestSample]) -> float | None:
    """The figure an operator types from `prompt --repeat`: the median request's tok/s."""
    values = [s.decode_tok_s for s in samples if s.ok and s.decode_tok_s]
    return statistics.median(values) if values else None
