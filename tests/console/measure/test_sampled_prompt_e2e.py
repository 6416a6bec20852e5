"""On the real bundled engine: a prompt at temperature 1 with seed 7 read twice gives the
same tokens and figures (the engine is deterministic given the seed the console derives
per passage and read), and greedy is what it always was."""

from __future__ import annotations

import pytest

from console.measure import methods
from console.measure.session import MeasureSession
from console.sampling import GREEDY, Sampling
from console.service import EngineService

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


async def _prompt(service: EngineService, sampling: Sampling) -> methods.MethodResult:
    session = MeasureSession(service)
    session.sampling = sampling  # what `prompt --temperature 1 --seed 7` sets
    return await methods.probe(session, context=64, max_tokens=24)


async def test_a_seeded_sampled_prompt_twice_gives_the_same_tokens(
    started_engine: EngineService,
) -> None:
    t1 = Sampling(temperature=1.0, seed=7)
    first, again = await _prompt(started_engine, t1), await _prompt(started_engine, t1)
    (a,), (b,) = first.samples, again.samples
    assert a.seed is not None and a.seed == b.seed and a.temperature == 1.0
    assert a.output_ids == b.output_ids and a.verify_steps == b.verify_steps
    assert first.sampling_label == "T=1 seed 7"
    greedy = await _prompt(started_engine, GREEDY)
    (g,) = greedy.samples
    assert g.seed is None and g.temperature == 0.0 and greedy.sampling_label == "greedy"
    (g2,) = (await _prompt(started_engine, GREEDY)).samples
    assert g.output_ids == g2.output_ids and g.verify_steps == g2.verify_steps
