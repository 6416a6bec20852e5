"""Typed figures and typed contexts, on synthetic timings of known physics.

A typed figure carries this host's per-request noise at its point (never a zero-width
interval unless exact by construction, and then it says "exact"); what the operator
types as a context is a prompt length, converted with the output to the model's
mid-decode context; a context beyond the engine's is refused naming the limit; a
suggested sweep, run as printed, covers what it was suggested for; and a sweep's own
figures typed back reproduce a residual of about 0."""

from __future__ import annotations

import math
import random
import re
import statistics
from dataclasses import replace

from console.analysis.decompose import fit
from console.analysis.intervals import pool
from console.analysis.records import RequestSample
from console.analysis.typed_noise import FigureNoise, NoiseProfile, noise_at
from console.analysis.verdict import Observed, Sweep, judge, typed_baseline

OUTPUT = 240
COMMIT = {"code": 3.6, "prose": 2.4}
LIMIT = 2048


def step_at(ctx: float) -> float:
    """2 ms + 3 ms per 1k tokens of mid-decode context: steep enough that reading a prompt
    length as a mid-decode context (off by half of 240 tokens) shows."""
    return 0.002 + 0.003 * ctx / 1000


def requests(kind: str, prompt: int, n: int, *, rng: random.Random, noise: float = 0.02,
             output: int = OUTPUT, slower: float = 1.0,
             commit: dict[str, float] = COMMIT) -> list[RequestSample]:  # fmt: skip
    out = []
    mid = prompt + output / 2
    for i in range(n):
        steps = round((output - 1) / commit[kind])
        decode = steps * step_at(mid) * slower * max(0.5, rng.gauss(1.0, noise))
        out.append(RequestSample(
            engine="builtin", endpoint="/generate", text_type=kind,
            prompt_id=f"{kind}@{prompt}#{i}",
            context_tokens=prompt, max_tokens=output, ignore_eos=True, streamed=False,
            flags_hash="abc", completion_tokens=output, finish_reason="length", latency_s=1.0,
            ttft_s=None, decode_time_s=decode, decode_source="server", verify_steps=steps,
            decode_tok_s=(output - 1) / decode, commit_len=(output - 1) / steps,
            step_time_s=decode / steps, decode_context=float(mid),
        ))  # fmt: skip
    return out


def sweep(prompts=(64, 256, 512, 1024), repeat: int = 4, seed: int = 1, **kw) -> Sweep:
    rng = random.Random(seed)
    samples = [s for p in prompts for k in ("code", "prose")
               for s in requests(k, p, repeat, rng=rng, **kw)]  # fmt: skip
    return Sweep(tuple(samples), host="gpu1", context_limit=LIMIT, source="sweep run 7")


def point_tok_s(s: Sweep, kind: str, prompt: int) -> float:
    return pool([x for x in s.samples if x.text_type == kind and x.context_tokens == prompt]).tok_s


def rerun(offer: str, seed: int = 3) -> Sweep:
    """The offered `specconsole sweep ...` command, run as printed on the same physics."""
    contexts = [int(c) for c in re.search(r"--contexts (\S+)", offer).group(1).split(",")]
    output = int(re.search(r"--output (\d+)", offer).group(1))
    kinds = re.search(r"--text (\S+)", offer).group(1).split(",")
    repeat = int(re.search(r"--repeat (\d+)", offer).group(1))
    rng = random.Random(seed)
    samples = [s for p in contexts for k in kinds
               for s in requests(k, p, repeat, rng=rng, output=output)]  # fmt: skip
    return Sweep(tuple(samples), host="gpu1", context_limit=LIMIT)


# -- contexts ----------------------------------------------------------------------------


def test_a_sweeps_own_figures_typed_back_give_a_residual_of_about_zero() -> None:
    s = sweep()
    for (ka, pa), (kb, pb) in ((("code", 64), ("prose", 1024)), (("prose", 256), ("code", 512))):
        observed = Observed.typed(point_tok_s(s, kb, pb), pb, kb)  # the prompt, as typed
        baseline = typed_baseline(s, point_tok_s(s, ka, pa), pa, ka)
        j = judge(s, observed, baseline)
        residual = j.factor("residual")
        assert residual is not None and abs(residual.ratio.value - 1) < 0.03, j.text()
        assert f"prompt {pb} + {OUTPUT} out (mid-decode context {pb + OUTPUT // 2})" in j.text()


def test_a_prompt_beyond_the_engines_context_length_is_refused_naming_the_limit() -> None:
    j = judge(
        sweep(), Observed.typed(32.0, 5000, "prose"), typed_baseline(sweep(), 138.0, 13, "code")
    )
    assert j.outcome == "not enough evidence" and j.offer is None and j.factors == ()
    assert "beyond this engine's context length of 2048 tokens" in j.headline
    assert j.headline.count(". ") == 0  # one sentence


def test_a_short_baseline_gets_a_sweep_that_covers_it_run_as_printed() -> None:
    s = sweep()  # prompts 64-1024 with 240 out: mid-decode 184-1144
    observed = Observed.typed(point_tok_s(s, "prose", 1024), 1024, "prose")
    j = judge(s, observed, typed_baseline(s, 700.0, 13, "code"))
    assert j.outcome == "not enough evidence" and "outside the swept" in j.headline
    assert j.offer is not None and 13 in j.offer_contexts, j.offer
    again = judge(rerun(j.offer), observed, typed_baseline(s, 700.0, 13, "code"))
    assert "outside the swept" not in again.headline, again.text()


def test_a_short_figure_with_its_own_short_output_gets_a_shorter_output_sweep() -> None:
    s = sweep()
    base = typed_baseline(s, 700.0, 13, "code", output=16)  # mid-decode context 21
    observed = Observed.typed(point_tok_s(s, "prose", 1024), 1024, "prose")
    j = judge(s, observed, base)
    assert j.offer is not None and j.offer_output is not None and j.offer_output < OUTPUT
    again = judge(rerun(j.offer), observed, base)
    assert "outside the swept" not in again.headline, again.text()


# -- typed noise -------------------------------------------------------------------------


def test_the_same_engine_typed_twice_is_rarely_a_false_alarm_and_carries_its_noise() -> None:
    alarms = 0
    for seed in range(40):
        s = sweep(noise=0.12, seed=seed)
        rng = random.Random(100 + seed)
        # One request each, the same point: all they differ by is this host's noise.
        a, b = (requests("code", 256, 1, rng=rng, noise=0.12)[0].decode_tok_s for _ in "ab")
        j = judge(s, Observed.typed(b, 256, "code"), typed_baseline(s, a, 256, "code"))
        alarms += j.outcome == "not physics"
        residual = j.factor("residual")
        assert residual is not None and residual.ratio.low < residual.ratio.high
        assert j.factor("context").exact and j.factor("text").exact
        assert "exact: same mid-decode context" in j.text() or "exact" in j.headline
        assert "carries this host's noise" in j.text() and "sweep run 7" in j.text()
        if "residual" in j.headline:  # the one interval, quoted the same
            assert residual.text() in j.headline
    # Taken at face value (no interval) about half of these pairs differ by over 10%.
    assert alarms <= 4


def test_a_typed_regression_far_beyond_the_noise_is_still_not_physics() -> None:
    s = sweep(noise=0.03)
    a = point_tok_s(s, "code", 256)
    j = judge(s, Observed.typed(a / 1.6, 256, "code"), typed_baseline(s, a, 256, "code"))
    assert j.outcome == "not physics", j.text()


def test_a_typed_figure_with_no_noise_model_offers_the_one_command_that_measures_it() -> None:
    s = sweep(repeat=1)
    j = judge(s, Observed.typed(300.0, 256, "code"), typed_baseline(s, 320.0, 256, "code"))
    assert j.outcome == "not enough evidence" and "no noise measured" in j.headline
    assert j.offer is not None and "--repeat 3" in j.offer and 256 in j.offer_contexts


def test_a_calibration_profile_is_preferred_to_the_sweeps_spread() -> None:
    s = sweep(noise=0.12)
    calm = [1.0 + 0.01 * (i % 5 - 2) for i in range(30)]
    profile = NoiseProfile.from_dict({"source": "calibration of gpu1", "drift": 0.02, "points": [
        {"text_type": "code", "context": 376, "ratios": calm}]})  # fmt: skip
    narrow = noise_at(s.samples, "code", 376, profile=profile)
    wide = noise_at(s.samples, "code", 376, source="sweep run 7")
    assert narrow is not None and wide is not None
    assert narrow.source == "calibration of gpu1" and narrow.drift == 0.02
    assert wide.band()[1] - wide.band()[0] > narrow.band()[1] - narrow.band()[0]
    empty = noise_at(s.samples, "code", 376, profile=NoiseProfile((), "none"), source="sweep run 7")
    assert empty == wide


def two_passage_sweep(seed: int = 3, noise: float = 0.02) -> Sweep:
    """Every point read as two passages four times each, one of them 1.8x the other's
    commit (a fast and a slow text of one type), each read with 2% timing noise."""
    rng = random.Random(seed)
    samples = []
    for p in (64, 256, 512, 1024):
        for k in ("code", "prose"):
            for passage, scale in (("a", 0.7), ("b", 1.26)):
                commit = {k: COMMIT[k] * scale}
                for s in requests(k, p, 4, rng=rng, noise=noise, commit=commit):
                    samples.append(replace(s, prompt_id=f"{k}-{passage}"))
    return Sweep(tuple(samples), host="gpu1", context_limit=LIMIT, source="sweep run 8")


def test_passage_mix_is_not_noise_between_figures_of_the_same_passages() -> None:
    s = two_passage_sweep()
    noise = noise_at(s.samples, "code", 376, source="sweep run 8")
    assert noise is not None and noise.sigma < 0.05, noise  # timing, not the 1.8x mix
    assert noise.df == 4 * (8 - 2), noise  # 8 reads less 2 passage means, 4 points
    a = point_tok_s(s, "code", 256)
    # Both figures the pooled tok/s of the same 8 reads: a 25% step-time regression
    # reads as one, and the unchanged engine reads as physics.
    slow = judge(s, Observed.typed_at(a / 1.25, 256, "code", requests=8, held_out=False),
                 typed_baseline(s, a, 256, "code", requests=8, held_out=False))  # fmt: skip
    assert slow.outcome == "not physics", slow.text()
    same = judge(s, Observed.typed_at(a * 1.02, 256, "code", requests=8, held_out=False),
                 typed_baseline(s, a, 256, "code", requests=8, held_out=False))  # fmt: skip
    assert same.outcome == "physics", same.text()


def test_a_typed_comparison_carries_the_calibrated_drift_once() -> None:
    shift_sd = 0.06
    noise = FigureNoise(1e-6, 1000, "code", 256.0, "calibration of gpu1", 1.96 * shift_sd, 30)
    rng = random.Random(5)
    logs = [math.log(noise.draw(rng) / noise.draw(rng)) for _ in range(4000)]
    assert abs(statistics.pstdev(logs) / shift_sd - 1) < 0.08


def test_headline_and_arithmetic_quote_the_one_residual_interval() -> None:
    s = sweep(noise=0.05)
    window = Observed.from_requests(requests("prose", 512, 6, rng=random.Random(4), noise=0.05))
    live = Observed(window.tok_s, window.context, None, window.commit, window.step_s,
                    window.requests)  # fmt: skip
    j = judge(s, live)
    residual = j.factor("residual")
    assert residual is not None
    assert residual.text() in j.headline
    assert any(line.endswith(f"residual {residual.text()}") for line in j.lines), j.text()


def test_two_points_make_no_fits_claim() -> None:
    model = fit(sweep(prompts=(64, 1024)).samples)
    text = model.describe()[0]
    assert "fits:" not in text and "0% off" not in text
    assert "cannot be off them" in text and "mid-decode" in text
    assert "worst of 3 points" in fit(sweep(prompts=(64, 512, 1024)).samples).describe()[0]


def test_an_exact_factor_says_so_and_still_moves_when_it_is_not_one() -> None:
    from console.analysis.intervals import Interval
    from console.analysis.verdict import FactorRange

    same = FactorRange("context", Interval(1.0, 1.0, 1.0), "", "same mid-decode context")
    commit = FactorRange(
        "commit", Interval(0.7, 0.7, 0.7), "", "greedy commit on the same passages"
    )
    bare = FactorRange("residual", Interval(1.2, 1.2, 1.2))
    assert same.text() == "no change (exact: same mid-decode context)" and not same.moved
    assert commit.text() == "-30% (exact: greedy commit on the same passages)" and commit.moved
    assert bare.text() == "+20% (no interval: nothing to resample)" and not bare.moved


def test_an_uncertain_text_type_quotes_the_one_widened_residual_everywhere() -> None:
    close = {"code": 2.55, "prose": 2.4}  # two texts within 10%: the type is uncertain
    for noise in (0.05, 0.3):
        s = sweep(noise=noise, commit=close)
        got = Observed.from_requests(requests("prose", 512, 3, rng=random.Random(4),
                                              noise=noise, commit=close))  # fmt: skip
        j = judge(s, Observed(got.tok_s, got.context, None, got.commit, got.step_s,
                              got.requests))  # fmt: skip
        residual = j.factor("residual")
        assert residual is not None and j.text_inferred
        assert any(line.endswith(f"residual {residual.text()}") for line in j.lines), j.text()
        if "residual" in j.headline:
            assert residual.text() in j.headline, j.text()


def test_merging_two_text_types_requotes_the_widened_residual_in_the_reason() -> None:
    from dataclasses import replace

    from console.analysis.verdict import _merge

    s = sweep(noise=0.3)
    got = Observed.from_requests(requests("prose", 512, 3, rng=random.Random(4), noise=0.3))
    judged = [judge(s, replace(got, text_type=k)) for k in ("prose", "code")]
    judged = [replace(j, outcome="not enough evidence") for j in judged]  # as if both agreed
    judged[0] = replace(judged[0], reasons=(f"the residual, {judged[0].factor('residual').text()}, "
                                            "is too wide",))  # fmt: skip
    merged = _merge(judged, [])
    residual = merged.factor("residual")
    assert residual.text() in merged.headline, merged.headline
    assert any(line.endswith(f"residual {residual.text()}") for line in merged.lines)


def test_the_field_reports_question_typed_is_physics_with_both_factors() -> None:
    # A long prompt of prose against a short one of code, one request each: "it was
    # 1200, now it is 310" splits into context x text, each with its interval.
    for seed in range(10):
        s = sweep(prompts=(64, 256, 512, 1024, 1700), noise=0.08, seed=seed)
        rng = random.Random(50 + seed)
        long = requests("prose", 1700, 1, rng=rng, noise=0.08)[0].decode_tok_s
        short = requests("code", 64, 1, rng=rng, noise=0.08)[0].decode_tok_s
        j = judge(s, Observed.typed(long, 1700, "prose"), typed_baseline(s, short, 64, "code"))
        assert j.outcome == "physics", j.text()
        ctx, text = j.factor("context"), j.factor("text")
        assert ctx.moved and text.moved and ctx.ratio.low < ctx.ratio.high
        assert "context x0." in j.headline and "text x0." in j.headline
        if j.factor("residual").ratio.rel_half_width > 0.15:
            assert "too wide to rule out a smaller bug" in j.headline


def test_a_residual_made_wide_by_the_drift_says_more_requests_will_not_narrow_it() -> None:
    s = sweep()
    a = point_tok_s(s, "code", 256)
    calm = [1.0 + 0.01 * (i % 5 - 2) for i in range(30)]

    def typed(drift: float, ratios: list[float]) -> str:
        profile = NoiseProfile.from_dict({"source": "calibration of gpu1", "drift": drift,
                                          "points": [{"text_type": "code", "context": 376,
                                                      "ratios": ratios}]})  # fmt: skip
        j = judge(replace(s, noise_profile=profile),
                  Observed.typed_at(a * 0.9, 256, "code", requests=3),
                  typed_baseline(s, a, 256, "code", requests=3))  # fmt: skip
        assert j.outcome == "not enough evidence", j.text()
        return j.text()

    drifty = typed(0.30, calm)  # the host's drift across blocks: ± 30%, requests agree
    assert "the host's drift between two figures" in drifty and "--repeat" not in drifty
    loud = [1.0 + 0.25 * (i % 5 - 2) for i in range(30)]  # requests ± 50%, no drift
    noisy = typed(0.0, loud)
    assert "more requests per point (repeat, --repeat) narrow it" in noisy
    assert "host's drift" not in noisy


def test_typed_figures_of_the_sweeps_passages_resample_the_sweep_within_each_passage() -> None:
    # Code at 64 -> 1024, each figure the pooled tok/s of the sweep's own eight reads (two
    # passages, one 1.8x the other's commit). The sweep read each passage equally often at
    # every point by design: a bootstrap that redraws the passages' shares point by point
    # puts that 1.8x mix into the context factor (here ± 20-40%), although every point
    # read the same mix. Resampled within each passage, the factor holds timing only.
    s = two_passage_sweep()
    before, after = point_tok_s(s, "code", 64), point_tok_s(s, "code", 1024)
    j = judge(s, Observed.typed_at(after, 1024, "code", requests=8, held_out=False),
              typed_baseline(s, before, 64, "code", requests=8, held_out=False))  # fmt: skip
    ctx, residual = j.factor("context"), j.factor("residual")
    assert ctx.moved and ctx.ratio.rel_half_width < 0.05, j.text()
    assert residual.ratio.contains(1.0) and residual.ratio.rel_half_width < 0.10, j.text()
    assert j.outcome == "physics", j.text()
    assert any("within each of its passages" in line for line in j.lines), j.lines
