"""`bench verdict` on the real bundled engine: one run of two cheap scenarios (one with a
flag restart) gives the table and JSON shapes, and the engine ends on its own flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.analysis.noise_profile import Z95
from console.analysis.sample_size import SampleTarget
from console.cli import build_parser
from console.config import BaselineProfile
from console.experiments.calibrate import BLOCKS
from console.experiments.verdict_bench import OUTPUT, SCENARIOS, run_bench
from console.measure.session import MeasureSession
from tests.console.conftest import engine_service
from tests.console.factories import builtin_profile

pytest.importorskip("engine.serve.app", reason="engine server not available")

# The profile's [baseline], what set --baseline reads: one code point of 32 tokens
SHORT_BASELINE = BaselineProfile(contexts=[256], output=32, text_types=["code"])


def test_the_command_defaults_to_local_five_runs_and_every_scenario() -> None:
    args = build_parser().parse_args(["bench", "verdict"])
    assert (args.host, args.runs, args.scenarios, args.output) == (
        "local", 5, list(SCENARIOS), OUTPUT,
    )  # fmt: skip
    assert args.paths == [
        "typed", "typed-own", "explain", "baseline", "baseline-ab", "baseline-abab",
    ]  # fmt: skip
    assert build_parser().parse_args(["bench", "verdict", "--paths", "typed"]).paths == ["typed"]
    args = build_parser().parse_args(["bench", "verdict", "gpu1", "--scenarios", "null,text"])
    assert (args.host, args.scenarios) == ("gpu1", ["null", "text"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "verdict", "--scenarios", "nope"])


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.asyncio
async def test_one_run_of_two_scenarios_on_the_real_engine_restores_the_flags(
    tmp_path: Path,
) -> None:
    profile = builtin_profile("bench-local", tmp_path / "state", baseline=SHORT_BASELINE)
    async with engine_service(profile, start=True) as service:
        original = dict((await service.current_config()).flags)
        result = await run_bench(
            MeasureSession(service), scenarios=["null", "tree-budget"], runs=1,
            output_tokens=32, target=SampleTarget(0.05, max_repeat=2, min_repeat=2, passages=2),
            paths=["typed", "typed-own", "explain", "baseline"],
        )  # fmt: skip
        assert dict((await service.current_config()).flags) == original
    assert result.restored and result.flags_after == original
    assert [(t.scenario, t.path, t.truth) for t in result.trials] == [
        ("null", "typed", "physics"), ("null", "typed-own", "physics"),
        ("null", "explain", "physics"), ("tree-budget", "typed", "not physics"),
        ("tree-budget", "typed-own", "not physics"), ("tree-budget", "explain", "not physics"),
        ("tree-budget", "baseline", "not physics"),
    ]  # fmt: skip
    # the operator's own figures: read as held out from the sweep, and settled by the
    # run the answer offers whenever it offers one
    for t in (t for t in result.trials if t.path == "typed-own"):
        typed = t.judgement.get("typed", t.judgement)
        assert typed["observed"]["held_out"] is True, typed
        # both scenarios keep one point: the operator re-sends the same prompts, so the
        # pair is read paired (`--passages same`) and no settling run can help
        assert typed["observed"]["same_prompts"] is True and "settled" not in t.judgement
        if "settled" in t.judgement:
            # offered where passages leave the answer open, or carry a "not physics"
            assert typed["outcome"] in ("not enough evidence", "not physics"), typed
            if typed["outcome"] == "not physics":
                assert "confirm it on the same passages" in typed["headline"], typed
            assert t.judgement["settled"]["plan"]["passages"] >= 2
    for t in result.trials:
        assert t.outcome in ("physics", "not physics", "not enough evidence")
        assert t.effect is not None
    explained = [t for t in result.trials if t.path == "explain"]
    assert all(t.judgement["paired"] for t in explained)  # history explain pairs by passage
    typed = [t for t in result.trials if t.path == "typed"]
    # typed figures carry the calibration the bench measured first, with its drift
    calibration = result.params["calibration"]
    assert len(calibration["shifts"]) == BLOCKS - 1 and calibration["points"]
    for t in typed:
        noise = t.judgement["observed"]["noise"]
        # the calibration's own drift term (0 where its shifts were within timing noise)
        assert noise["source"] == "calibration of bench-local"
        assert noise["drift"] == pytest.approx(Z95 * calibration["drift_sd"])
    baseline = result.trials[-1].judgement
    assert baseline["order"] == "side-by-side"  # the default where the host holds both
    assert result.trials[-1].judgement["rows"]  # set --baseline's own comparison rows
    data = json.loads(json.dumps(result.as_dict(), default=str))
    assert [s["scenario"] for s in data["scenarios"]] == ["null", "tree-budget"]
    assert set(data["scenarios"][0]) >= {"truth", "outcomes", "right", "accuracy", "true_effect"}
    assert data["false_alarms"]["of"] == 3 and data["restored"] is True
    assert data["false_alarms"]["upper_95"] is not None
    assert set(data["paths"]) == {"typed", "typed-own", "explain", "baseline"}
    assert data["params"]["sweep_passages"] == 6
    assert data["params"]["changes"] == {"tree-budget": {"speculative-ddtree-budget": "3"}}
    table = result.table()
    assert table[0].split()[:2] == ["scenario", "truth"]
    assert [line.split()[0] for line in table[2:4]] == ["null", "tree-budget"]
    assert any(line.startswith("false alarms") for line in table)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.asyncio
async def test_only_the_apply_path_asked_runs_no_sweep_and_restores_the_flags(
    tmp_path: Path,
) -> None:
    # set --baseline reads the profile's own baseline (the operator's default options),
    # not the bench's --output or target: here one short point, so the run is minutes
    profile = builtin_profile("bench-apply", tmp_path / "state", baseline=SHORT_BASELINE)
    async with engine_service(profile, start=True) as service:
        original = dict((await service.current_config()).flags)
        result = await run_bench(
            MeasureSession(service), scenarios=["null", "tree-budget"], runs=1,
            paths=["baseline"], calibrate=False,
        )  # fmt: skip
        assert dict((await service.current_config()).flags) == original
    # null has no apply path; tree-budget's one trial measured its own sides, no sweep
    assert [(t.scenario, t.path) for t in result.trials] == [("tree-budget", "baseline")]
    (trial,) = result.trials
    assert trial.judgement["order"] == "side-by-side" and trial.judgement["rows"]
    assert trial.outcome == "not physics", trial.headline
    assert "sweep and unchanged sides" not in result.timings
