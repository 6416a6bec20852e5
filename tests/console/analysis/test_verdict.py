"""The verdict that knows its limits: each of its three outcomes reached with synthetic
samples of known physics, the refusals (outside the sweep, a falling step line, too few
requests, an uncertain text type) and no false alarm on an unchanged engine."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from console.analysis.decompose import fit
from console.analysis.records import RequestSample
from console.analysis.verdict import OUTCOMES, Observed, Sweep, judge, paired, typed_verdict

OUTPUT = 64
COMMIT = {"code": 3.6, "prose": 2.4}


def step_at(ctx: float) -> float:
    """20 ms + 10 ms per 1k tokens of decode context: the physics the samples carry."""
    return 0.020 + 0.010 * ctx / 1000


def requests(
    kind: str,
    ctx: int,
    n: int,
    *,
    rng: random.Random,
    noise: float = 0.03,
    slower: float = 1.0,
    commit: dict[str, float] = COMMIT,
    step=step_at,
) -> list[RequestSample]:
    """`n` requests at one point; each request's step time off by `noise` (relative sd)."""
    out = []
    decode_ctx = ctx + OUTPUT / 2
    for i in range(n):
        steps = round((OUTPUT - 1) / commit[kind])
        decode = steps * step(decode_ctx) * slower * max(0.5, rng.gauss(1.0, noise))
        out.append(RequestSample(
            engine="builtin", endpoint="/generate", text_type=kind, prompt_id=f"{kind}@{ctx}#{i}",
            context_tokens=ctx, max_tokens=OUTPUT, ignore_eos=True, streamed=False,
            flags_hash="abc", completion_tokens=OUTPUT, finish_reason="length", latency_s=1.0,
            ttft_s=None, decode_time_s=decode, decode_source="server", verify_steps=steps,
            decode_tok_s=(OUTPUT - 1) / decode, commit_len=(OUTPUT - 1) / steps,
            step_time_s=decode / steps, decode_context=float(decode_ctx),
        ))  # fmt: skip
    return out


def sweep(repeat: int = 4, contexts=(64, 256, 512, 1024), seed: int = 1, **kw) -> Sweep:
    rng = random.Random(seed)
    samples = [s for c in contexts for k in ("code", "prose")
               for s in requests(k, c, repeat, rng=rng, **kw)]  # fmt: skip
    return Sweep(tuple(samples), host="gpu1", context_limit=2048)


def observed(kind: str, ctx: int, n: int = 6, seed: int = 7, **kw) -> Observed:
    return Observed.from_requests(requests(kind, ctx, n, rng=random.Random(seed), **kw))


def test_physics_context_growth_names_the_context_factor_with_its_interval() -> None:
    j = judge(sweep(), observed("prose", 1024), observed("prose", 64, seed=8))
    assert j.outcome == "physics", j.text()
    ctx, text = j.factor("context"), j.factor("text")
    assert ctx.moved and not text.moved
    assert ctx.ratio.low < ctx.ratio.value < ctx.ratio.high < 1.0
    assert "Physics:" in j.headline and "context x0." in j.headline
    assert j.as_dict()["outcome"] == "physics"


def test_physics_text_change_at_the_same_context() -> None:
    j = judge(sweep(), observed("prose", 256), observed("code", 256, seed=8))
    assert j.outcome == "physics", j.text()
    assert j.factor("text").moved and not j.factor("context").moved


def test_not_physics_when_the_residual_lies_outside_its_interval() -> None:
    # the same text and context, every round 60% slower: neither factor explains it
    j = judge(sweep(), observed("prose", 256, slower=1.6), observed("prose", 256, seed=8))
    assert j.outcome == "not physics", j.text()
    residual = j.factor("residual").ratio
    assert residual.high < 1.0 and "bug hunt" in j.headline


def test_no_false_alarm_on_an_unchanged_engine_prose_after_prose() -> None:
    for seed in range(5):
        j = judge(sweep(seed=seed), observed("prose", 256, seed=seed + 10),
                  observed("prose", 256, seed=seed + 20))  # fmt: skip
        assert j.outcome != "not physics", j.text()


def test_inferred_text_type_that_fits_two_types_is_said_and_never_a_false_alarm() -> None:
    close = {"code": 2.55, "prose": 2.4}  # the two texts commit within 10% of each other
    s = sweep(commit=close)
    window = observed("prose", 512, commit=close)
    live = Observed(window.tok_s, window.context, None, window.commit, window.step_s,
                    window.requests)  # fmt: skip
    j = judge(s, live)
    assert j.outcome != "not physics", j.text()
    assert j.text_inferred
    assert any("text type uncertain" in line for line in j.lines) or "uncertain" in j.headline


def test_a_commit_that_resembles_no_swept_type_is_not_enough_evidence() -> None:
    odd = observed("prose", 256, commit={"prose": 6.0})
    j = judge(sweep(), Observed(odd.tok_s, odd.context, None, odd.commit, odd.step_s))
    assert j.outcome == "not enough evidence" and "resembles none" in j.headline


def test_outside_the_swept_contexts_is_refused_with_the_sweep_to_run() -> None:
    j = judge(sweep(), Observed.typed(60.0, 1900, "prose"), Observed.typed(138.0, 64, "prose"))
    assert j.outcome == "not enough evidence"
    assert "prompt 1900 + 64 out" in j.headline
    assert "outside the swept contexts (mid-decode" in j.headline
    assert j.offer is not None and j.offer.startswith("specconsole sweep gpu1 --contexts 64,")
    assert ",1900 " in j.offer and "--repeat 3" in j.offer  # the typed prompt, as typed
    assert j.factors == ()  # nothing extrapolated, nothing to misread
    assert "to settle it: specconsole sweep" in j.text()


def test_a_step_line_that_falls_with_context_is_a_measurement_problem() -> None:
    falling = sweep(step=lambda ctx: 0.040 - 0.010 * ctx / 1000)
    j = judge(falling, observed("prose", 512), observed("prose", 64, seed=8))
    assert j.outcome == "not enough evidence"
    assert j.problems and "falls with context" in j.problems[0]
    assert "measurement problem" in j.text()


def test_a_refusal_still_says_how_each_typed_figure_was_read() -> None:
    # No answer, but the operator sees which context the model would have read each
    # typed figure at, and what it rests on.
    falling = sweep(step=lambda ctx: 0.040 - 0.010 * ctx / 1000)
    typed = Observed.typed_at(60.0, 512, "prose", output=16, requests=3)
    j = judge(falling, typed, Observed.typed_at(138.0, 64, "prose", output=16))
    assert j.outcome == "not enough evidence"
    assert j.lines[0] == ("observed: 60.0 tok/s at prompt 512 + 16 out (mid-decode context "
                          "520) (typed, taken as the median of 3 requests)")  # fmt: skip
    assert j.lines[1].startswith("baseline: 138.0 tok/s at prompt 64 + 16 out (mid-decode")
    assert "prompt 512 + 16 out (mid-decode context 520)" in j.text()
    assert any(line.startswith("observed (typed, taken as the median of 3 requests) carries "
                               "this host's noise") for line in j.lines), j.lines  # fmt: skip


def test_a_fall_within_the_sweeps_own_noise_is_not_called_a_measurement_problem() -> None:
    # A cheap model: step time barely rises from 13 to 512. One request at the low
    # context read in a slow burst of the host makes the fitted line fall well over 5%,
    # and its refits say the fall is one request's noise, not the sweep's shape.
    flat = lambda ctx: 0.004 + 0.0002 * ctx / 1000  # noqa: E731
    rng = random.Random(3)
    samples = [s for c in (13, 64, 512) for k in ("code", "prose")
               for s in requests(k, c, 3, rng=rng, noise=0.01, step=flat)]  # fmt: skip
    slow = next(s for s in samples if s.context_tokens == 13 and s.text_type == "code")
    i = samples.index(slow)
    samples[i] = replace(slow, step_time_s=slow.step_time_s * 1.6,
                         decode_time_s=slow.decode_time_s * 1.6,
                         decode_tok_s=slow.decode_tok_s / 1.6)  # fmt: skip
    noisy = Sweep(tuple(samples), host="gpu1", context_limit=2048)
    model = fit(noisy.samples)
    lo, hi = model.contexts
    assert model.step_by_type["code"].at(hi) < model.step_by_type["code"].at(lo) * 0.95
    live = Observed.from_requests(requests("code", 512, 6, rng=random.Random(7), step=flat))
    j = judge(noisy, live)
    assert not j.problems, j.text()
    assert "falls with context" not in j.text()


def test_one_request_per_point_is_not_enough_evidence() -> None:
    j = judge(sweep(repeat=1), observed("prose", 1024), observed("prose", 64, seed=8))
    assert j.outcome == "not enough evidence" and "--repeat 3" in j.headline


def test_a_noisy_host_gives_an_interval_too_wide_to_judge() -> None:
    noisy = sweep(repeat=2, noise=0.35)
    expected = fit(noisy.samples).predict(544, "prose")
    j = judge(noisy, Observed.typed(expected, 544, "prose"))
    assert j.outcome == "not enough evidence", j.text()
    assert "too wide" in j.headline


def test_a_one_context_sweep_is_not_a_model() -> None:
    j = judge(sweep(contexts=(256,)), Observed.typed(60.0, 256, "prose"))
    assert j.outcome == "not enough evidence" and "one context" in j.headline
    assert j.offer is not None


def test_a_baseline_far_off_the_models_prediction_is_flagged() -> None:
    j = judge(sweep(), observed("prose", 256), Observed.typed(300.0, 64, "prose"))
    assert j.baseline_check is not None and j.baseline_check.moved
    assert j.outcome == "not enough evidence" and "baseline" in j.headline


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_every_outcome_is_in_the_json(outcome: str) -> None:
    cases = {
        "physics": (observed("prose", 1024), observed("prose", 64, seed=8)),
        "not physics": (observed("prose", 256, slower=1.6), observed("prose", 256, seed=8)),
        "not enough evidence": (Observed.typed(60.0, 1900, "prose"), None),
    }
    j = judge(sweep(), *cases[outcome])
    data = j.as_dict()
    assert data["outcome"] == outcome
    assert set(data) >= {"headline", "factors", "reasons", "offer", "observed", "arithmetic"}


def test_a_commit_collapse_hidden_by_cheaper_rounds_is_not_physics() -> None:
    # speculation off on a cheap CPU model: commit 1, rounds 2.4x cheaper, tok/s unchanged
    off = observed("prose", 256, commit={"prose": 1.0}, slower=1 / 2.42)
    j = judge(sweep(), Observed.from_requests(off.requests, "prose"),
              observed("prose", 256, seed=8))  # fmt: skip
    assert (
        j.factor("residual").ratio.contains(1.0) or abs(j.factor("residual").ratio.value - 1) < 0.1
    )
    assert j.outcome == "not physics", j.text()
    assert j.commit_check is not None and j.commit_check.ratio.high < 0.5
    assert "commit length is" in j.headline


def _passages(kind: str, ctx: int, reads: int, rng: random.Random) -> list[RequestSample]:
    """Two passages of very different commit (as on the bundled pair), each read `reads`
    times: greedy decoding commits the same on a passage every time, only timing varies."""
    out = []
    for p, commit in enumerate((COMMIT[kind] * 0.5, COMMIT[kind] * 2.5)):
        for s in requests(kind, ctx, reads, rng=rng, commit={kind: commit}):
            out.append(RequestSample.from_dict({**s.as_dict(), "prompt_id": f"{kind}@{ctx}#{p}"}))
    return out


def test_figures_on_the_sweeps_passages_are_paired_and_resampled_within_them() -> None:
    rng = random.Random(3)
    samples = [s for c in (64, 1024) for k in ("code", "prose") for s in _passages(k, c, 3, rng)]
    sweep = Sweep(tuple(samples), host="gpu1", context_limit=2048)
    after = Observed.from_requests(_passages("code", 1024, 3, rng))
    before = Observed.from_requests(_passages("code", 64, 3, rng))
    assert paired(sweep, after, before)
    j = judge(sweep, after, before)
    assert j.paired and j.outcome == "physics", j.text()
    assert j.commit_check is not None and j.commit_check.ratio.value == pytest.approx(1.0)
    assert any("paired by passage" in line for line in j.lines)
    # Other passages (or one read each) keep the plain bootstrap, and its wider interval.
    other = Observed.from_requests(requests("code", 1024, 6, rng=rng))
    assert not paired(sweep, other, before)
    assert not judge(sweep, other, before).paired
    unpaired = judge(Sweep(tuple(requests_any(samples))), after, before)
    assert not unpaired.paired
    assert (unpaired.factor("residual").ratio.rel_half_width
            > j.factor("residual").ratio.rel_half_width)  # fmt: skip


def requests_any(samples: list[RequestSample]) -> list[RequestSample]:
    """The same sweep with every request on a passage of its own."""
    return [RequestSample.from_dict({**s.as_dict(), "prompt_id": f"{s.prompt_id}.{i}"})
            for i, s in enumerate(samples)]  # fmt: skip


def test_a_factor_that_moved_a_little_is_small_not_unmoved() -> None:
    """A factor whose interval excludes 1 but which moved under 10% is real and small: the
    headline says "small", not "did not move" (that is kept for an interval holding 1)."""
    from console.analysis.intervals import Interval
    from console.analysis.verdict_records import FactorRange
    from console.analysis.verdict_wording import factor_state

    assert factor_state(FactorRange("text", Interval(0.95, 0.91, 0.98))) == " (small)"
    assert factor_state(FactorRange("text", Interval(0.97, 0.91, 1.02))) == " (did not move)"
    assert factor_state(FactorRange("text", Interval(1.78, 1.75, 1.81))) == " (moved)"
    assert factor_state(FactorRange("text", Interval(1.0, 1.0, 1.0), exact="same text")) == ""


def test_a_residual_that_holds_no_change_but_reaches_past_15_percent_is_not_physics() -> None:
    """-12% ± 12% holds no change and is under ± 15% wide, yet reaches -23%: a typed
    tree-budget change (-12% tok/s, the drafter's acceptance fell) was called physics on
    it. The interval's farther end decides, unless the factors explain far more."""
    from console.analysis.intervals import Interval
    from console.analysis.verdict_outcome import decide as _outcome
    from console.analysis.verdict_records import FactorRange

    context = FactorRange("context", Interval(1.0, 1.0, 1.0), exact="same mid-decode context")
    text = FactorRange("text", Interval(1.0, 1.0, 1.0), exact="same text")
    reaching = FactorRange("residual", Interval(0.88, 0.77, 1.005))
    assert reaching.ratio.rel_half_width < 0.15
    outcome, reasons = _outcome([], (context, text, reaching))
    assert outcome == "not enough evidence"
    assert "could be -23%: too wide to tell physics from a bug" in reasons[0]
    narrow = FactorRange("residual", Interval(0.99, 0.90, 1.09))
    assert _outcome([], (context, text, narrow))[0] == "physics"
    # a context factor that explains far more than the residual could: physics still
    grown = FactorRange("context", Interval(0.33, 0.31, 0.35))
    assert _outcome([], (grown, text, reaching))[0] == "physics"


def _windows_of(kind: str, ctx: int, commits: list[float], reads: int, rng: random.Random,
              windows=None) -> list[RequestSample]:  # fmt: skip
    """`reads` requests of each window (its commit from `commits`), timing noise 2%."""
    out = []
    for w, commit in enumerate(commits):
        if windows is not None and w not in windows:
            continue
        for s in requests(kind, ctx, reads, rng=rng, noise=0.02, commit={kind: commit}):
            out.append(replace(s, prompt_id=f"{kind}@{ctx}#{w}"))
    return out


def test_figures_on_some_of_the_sweeps_passages_are_judged_against_those_passages() -> None:
    # Six passages a point whose commits differ 3x (code at 256 on the bundled pair reads
    # 4.6 to 12); the sides of a comparison read windows 0 and 1, whose commits are not
    # the point's mean. Judged against all six, a change of text alone (code -> prose,
    # same context) was read off the model (here the baseline check refused it; on the
    # real engine a constant -22% residual no resample widened: "not physics").
    rng = random.Random(4)
    commit = {"code": [2.0, 2.2, 3.5, 4.0, 4.5, 5.5], "prose": [4.0, 4.4, 2.0, 2.4, 2.2, 2.1]}
    sweep_samples = [s for c in (64, 512, 1024) for k in ("code", "prose")
                     for s in _windows_of(k, c, commit[k], 2, rng)]  # fmt: skip
    sweep = Sweep(tuple(sweep_samples), host="gpu1", context_limit=2048)
    before = Observed.from_requests(_windows_of("code", 64, commit["code"], 3, rng, {0, 1}))
    after = Observed.from_requests(_windows_of("prose", 64, commit["prose"], 3, rng, {0, 1}))
    j = judge(sweep, after, before)
    assert j.outcome == "physics", j.text()
    assert j.paired and abs(j.factor("residual").ratio.value - 1) < 0.05, j.text()
    # typed as numbers, saying which of the sweep's windows they read (`prompt --repeat 2`
    # reads windows 0 and 1): the same reading
    typed = typed_verdict(sweep, after.tok_s, 64, "prose", output=64, requests=6,
                          baseline=before.tok_s, baseline_prompt=64, baseline_text="code",
                          baseline_output=64, baseline_requests=6, held_out=False,
                          windows=["0", "1"])  # fmt: skip
    assert typed.outcome == "physics", typed.text()
    # the same figures against a sweep of other passages keep the passage term: no claim
    elsewhere = Sweep(tuple(replace(s, prompt_id=s.prompt_id + "x") for s in sweep_samples),
                      host="gpu1", context_limit=2048)  # fmt: skip
    assert judge(elsewhere, after, before).outcome != "not physics"
