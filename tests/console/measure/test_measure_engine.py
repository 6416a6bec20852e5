"""The measurement core on the real engine with the bundled pair, through `local`.

One engine process serves the whole module (each start costs seconds on two cores).
Assertions are about physics the bundled pair shows robustly (step time grows with
context, random words commit less than the text the pair drafts best) and about the arithmetic
reconciling, never about absolute speeds.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from console.analysis.decompose import BAD_FIT, fit, pooled_tok_s
from console.analysis.sample_size import SampleTarget
from console.analysis.verdict import Observed, Sweep, judge
from console.measure import methods
from console.measure.prompts import PromptLibrary
from console.measure.session import MeasureError, MeasureSession
from console.service import EngineService
from console.store import RunStore

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]


def _random_text(path: Path) -> Path:
    # Text no drafter can predict: its commit length sits near 1 on any pair.
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    path.write_text(" ".join(words))
    return path


@pytest.fixture(scope="module")
def service(started_engine: EngineService) -> EngineService:
    return started_engine


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> PromptLibrary:
    lib = PromptLibrary.builtin()
    lib.extend_from_file(_random_text(tmp_path_factory.mktemp("texts") / "random.txt"))
    return lib


def _session(service: EngineService, library: PromptLibrary, tmp_path: Path) -> MeasureSession:
    return MeasureSession(service, store=RunStore(tmp_path / "h.sqlite"), library=library)


pytestmark.append(pytest.mark.asyncio(loop_scope="module"))


async def test_sweep_step_time_rises_with_context_and_commit_depends_on_text(
    service: EngineService, library: PromptLibrary, tmp_path: Path
) -> None:
    session = _session(service, library, tmp_path)
    result = await methods.context_sweep(
        session, contexts=[64, 1900], output_tokens=64, text_types=["repetitive", "random"],
        repeat=3,
    )  # fmt: skip
    assert result.status == "complete" and len(result.samples) == 12
    assert all(s.ok for s in result.samples), [s.flagged for s in result.samples]
    # exact prompt lengths, told by the engine itself
    assert {s.context_tokens for s in result.samples} == {64, 1900}
    by = {(p.text_type, p.context): p for p in result.points}
    steps = {c: min(by[(t, c)].step_s.median for t in ("repetitive", "random")) for c in (64, 1900)}
    assert steps[1900] > steps[64] * 1.1, steps
    assert result.model is not None and result.model.step.slope > 0
    # looping text is drafted better than random words (how much better depends on the
    # pair: the bundled target falls into its own loops whatever it is given, so random
    # words commit more than 1; the prompts and greedy outputs are fixed, so this is exact)
    assert by[("repetitive", 64)].commit.median > by[("random", 64)].commit.median
    # every figure carries its provenance, and tok/s = commit / step holds per request
    for s in result.samples:
        assert s.decode_source == "server" and not s.streamed and s.flags_hash
        assert s.decode_tok_s == pytest.approx(s.commit_len / s.step_time_s, rel=1e-9)
    stored = await session.store.run(result.run_id)
    assert stored.status == "complete" and len(stored.requests) == 12


async def test_decomposition_predicts_held_back_step_times(
    service: EngineService, library: PromptLibrary, tmp_path: Path
) -> None:
    session = _session(service, library, tmp_path)
    result = await methods.context_sweep(
        session, contexts=[64, 512, 1024, 1280, 1536, 1700, 1900], output_tokens=64,
        text_types=["prose"], repeat=4,
    )  # fmt: skip
    # 1280 and 1700 are held back from the fit: the step-time line predicts their step
    # time from the other contexts (the KV cache's physics) within 25%. Not tighter: on
    # this pair a round that commits more also costs more (the drafter takes in more
    # context rows, more KV rows are kept), and commit swings 5.5-8.5 between contexts;
    # since sweeps read two passages per point, a held-back point's commit (and so its
    # step) can sit 20% off the line on an idle host (seen: 7.23 ms against 8.73).
    # Their commit length itself is not predictable from neighbours on a 3M-parameter
    # pair (it follows whether the model's output loops at that context), so tok/s is
    # checked where commit was measured: the model's tok/s at a fitted point.
    # On a loaded host (CI runs vLLM beside this) one slow fitted point tilts the line:
    # seen, 10.1 ms predicted against 7.4 ms at 1700. The claim is that the line predicts
    # what it did not read about as well as it fits what it read, so the bound is 25% or
    # twice the fit's own worst residual, whichever is wider.
    held = {1280, 1700}
    model = fit([s for s in result.samples if s.context_tokens not in held])
    bound = max(0.25, 2 * model.step.max_rel_residual)
    for context in held:
        taken = [s for s in result.samples if s.context_tokens == context]
        observed = sum(s.step_time_s * s.verify_steps for s in taken) / sum(
            s.verify_steps for s in taken
        )
        predicted = model.step_at(taken[0].decode_context, "prose")
        assert abs(predicted - observed) <= bound * observed, (context, predicted, observed, bound)
    for context in (512, 1536):
        taken = [s for s in result.samples if s.context_tokens == context]
        at = taken[0].decode_context
        predicted = model.predict(at, "prose")
        observed_step = sum(s.decode_time_s for s in taken) / sum(s.verify_steps for s in taken)
        # tok/s = commit / step reconciles exactly: at a fitted point the model's tok/s
        # is off the pooled tok/s by the step line's residual there and nothing else (a
        # model of medians would not be). The residual itself is host noise (13% and 28%
        # were seen at one point on a loaded CI host): within the held-back points' bound,
        # or told to the operator as a rough fit, never silently off the line.
        residual = observed_step / model.step_at(at, "prose")
        assert predicted / pooled_tok_s(taken) == pytest.approx(residual, rel=1e-6), context
        off = abs(observed_step - model.step_at(at, "prose")) / observed_step
        assert off <= model.step.max_rel_residual + 1e-9, context
        rough = [n for n in model.notes if "not linear in context" in n]
        assert residual == pytest.approx(1.0, rel=0.25) or rough, (context, model.notes)
        assert bool(rough) == (model.step.max_rel_residual > BAD_FIT), model.notes
    # on the points it was fitted on, the commit curve is the observed commit itself
    fitted = [s for s in result.samples if s.context_tokens == 512]
    commit = sum(s.completion_tokens - 1 for s in fitted) / sum(s.verify_steps for s in fitted)
    assert model.commit_at("prose", fitted[0].decode_context) == pytest.approx(commit)
    # Two workers share two cores, so a point can sit over 20% off the line (24% seen):
    # then the model must say its step predictions are rough, never claim a fit.
    assert model.step_fits or any("not linear" in n for n in model.notes), model.notes


async def test_two_point_agrees_with_the_servers_decode_time(
    service: EngineService, library: PromptLibrary, tmp_path: Path
) -> None:
    session = _session(service, library, tmp_path)
    result = await methods.two_point(session, n1=16, n2=144, context=256, repeat=5)
    f = result.figures
    assert f["pairs"] == 5 and f["twopoint_tok_s"] and f["server_tok_s"]
    assert abs(f["agreement"]) < 0.2, f


async def test_stream_check_agrees_on_loopback(
    service: EngineService, library: PromptLibrary, tmp_path: Path
) -> None:
    session = _session(service, library, tmp_path)
    result = await methods.stream_check(session, context=256, max_tokens=128, repeat=3)
    f = result.figures
    streamed = [s for s in result.samples if s.streamed]
    assert streamed and all(s.client_decode_tok_s and s.ttft_s for s in streamed)
    assert f["distorted"] is False, f


async def test_context_above_the_engines_limit_is_refused_before_sending(
    service: EngineService, library: PromptLibrary, tmp_path: Path
) -> None:
    session = _session(service, library, tmp_path)
    limit = (await session.facts()).context_limit
    assert limit == 2048
    with pytest.raises(MeasureError, match="context length 2048"):
        await methods.context_sweep(session, contexts=[64, 2000], output_tokens=64)
    assert await session.store.runs() == []  # nothing started, nothing stored


async def test_request_not_as_asked_is_flagged_and_kept_out_of_medians(
    service: EngineService, library: PromptLibrary, tmp_path: Path
) -> None:
    session = _session(service, library, tmp_path)
    # 2 tokens of room: the engine stops at the context limit, not at max_tokens
    result = await methods.probe(session, text="x" * 2046, max_tokens=2, ignore_eos=True)
    ok = await methods.probe(session, text_type="code", context=128, max_tokens=32)
    assert ok.samples[0].ok
    sample = result.samples[0]
    assert (sample.flagged and sample.completion_tokens != 2) or sample.flagged is None
    if sample.flagged:
        assert result.points[0].n == 0 and result.points[0].flagged == 1


async def test_verdict_names_the_factor_that_moved(
    service: EngineService, library: PromptLibrary, tmp_path: Path
) -> None:
    session = _session(service, library, tmp_path)
    # Two passages a point, each read twice: figures taken from the sweep's own points are
    # then paired with the model by passage (timing noise only). Read once each, the two
    # random-text passages' commit spread made the residual +8% ± 284% on a loaded host.
    twice = SampleTarget(target_rel=0.0, min_repeat=4, max_repeat=4, passages=2)
    result = await methods.context_sweep(
        session, contexts=[64, 1024, 1900], output_tokens=64,
        text_types=["code", "repetitive", "random"], target=twice,
    )  # fmt: skip
    sweep = Sweep(tuple(result.samples), "local", None, "the sweep")

    def at(kind: str, context: int) -> Observed:
        return Observed.from_requests([s for s in result.samples
                                       if (s.text_type, s.context_tokens) == (kind, context)],
                                      kind, source="the sweep")  # fmt: skip

    # long context, same text: context growth, and no residual worth a bug hunt
    j = judge(sweep, at("random", 1900), at("random", 64))
    assert j.outcome != "not physics" and j.factor("context").moved, j.text()
    # same context, the text the pair drafts best against random words: the text factor.
    # (Which text drafts best is the pair's business; the sweep measured it.)
    commits = {p.text_type: p.commit.median for p in result.points if p.context == 64}
    easy = max(commits, key=commits.get)
    assert commits[easy] > 1.5 * commits["random"], commits
    j = judge(sweep, at("random", 64), at(easy, 64))
    # The text factor carries the change; on a loaded host four requests a point can
    # leave its interval across 1 (then the answer is, honestly, not enough evidence),
    # but a model that put the change anywhere else would read it near x1.00.
    text = j.factor("text")
    assert j.outcome != "not physics" and text.ratio.value < 0.8, j.text()
    assert text.moved or j.outcome == "not enough evidence", j.text()
    assert j.factor("context").ratio.value == 1.0 and j.factor("context").exact, j.text()
    # speculation switched off by a flag: the same point far below what the model predicts.
    # (A tiny tree, budget 1 with 2-token blocks, is no test of this on a CPU: its rounds
    # get so cheap that throughput barely moves.)
    plan = await service.plan({"speculative-algorithm": "NONE"})
    applied = await service.apply(plan, timeout=180)
    assert applied.ok, applied.event.describe()
    try:
        crippled = await methods.probe(session, text_type=easy, context=64, max_tokens=64, repeat=3)
        off = Observed.from_requests(crippled.samples, easy, source="speculation off")
        j = judge(sweep, off, at(easy, 64))
        assert j.outcome == "not physics" and "bug hunt" in j.headline, j.text()
        assert crippled.samples[0].flags_hash != result.samples[0].flags_hash
    finally:
        back = await service.rollback(timeout=180)
        assert back.ok


async def test_coverage_bench_reads_passages_the_sweep_never_read_and_stores_nothing(
    service: EngineService,
    library: PromptLibrary,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from console.experiments.coverage_bench import run_coverage

    store = RunStore(tmp_path / "h.sqlite")
    session = MeasureSession(service, store=store, library=library)
    result = await run_coverage(session, contexts=[64, 192], text_types=["code"], held_out=3,
                                calibrate=False,
                                output_tokens=24)  # fmt: skip
    assert [(p.text_type, p.prompt) for p in result.points] == [("code", 64), ("code", 192)]
    assert all(p.n == 3 and p.band.low < p.band.point < p.band.high for p in result.points)
    assert all(len(p.verdict_holds) == 3 for p in result.points)  # the verdict asked of each
    # every point's band is the model's, and the re-read pairs the sweep's six passages
    assert all(p.paired is not None and p.paired.pairs == 6 for p in result.points)
    assert result.as_dict()["overall"]["n"] == 6 and result.params["windows"] == [6, 8]
    assert session.store is store and await store.runs() == []  # the operator's history
    # what `specconsole bench coverage` prints and saves, from this result
    import json

    from console.commands.coverage_bench import print_coverage

    print_coverage(result)
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].split()[:3] == ["point", "n", "verdict"]
    assert shown[1].startswith("code@64") and any(x.startswith("all points") for x in shown)
    assert json.loads(json.dumps(result.as_dict()))["overall"]["figures"] == result.n == 6
