"""The sampling a host's traffic uses: a profile names it (validated), every request
carries it on each engine kind's fields with a seed per (passage, read), runs store it,
history refuses to compare two settings unawares, and commit at temperature > 0 is a
measured quantity with an interval, never "exact"."""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
from types import SimpleNamespace

import pytest

from console.analysis.pairing import paired_figures
from console.backends import get_adapter
from console.backends.request import RequestSpec
from console.commands.sampling_options import add_sampling_options, with_sampling
from console.config import HostProfile, parse_profile
from console.errors import ConfigError
from console.sampling import GREEDY, Sampling, comparable
from console.store.compare import check_sampling
from console.store.errors import HistoryError
from tests.console.analysis.test_intervals import BASE
from tests.console.factories import run_info

T1 = Sampling(temperature=1.0, top_p=0.9, seed=7)


def test_a_profile_is_greedy_by_default_and_names_its_sampling() -> None:
    assert HostProfile(name="h").sampling == GREEDY and GREEDY.label == "greedy"
    p = parse_profile("h", {"sampling": {"temperature": 0.6, "top_k": 50}}, "Host profile 'h'")
    assert p.sampling.label == "T=0.6 top-k 50 seed 0"


@pytest.mark.parametrize(
    ("field", "value"),
    [("temperature", -1), ("temperature", float("nan")), ("top_p", 0), ("top_p", 1.5),
     ("top_k", -2), ("seed", -1), ("seed_policy", "sometimes"), ("tempreature", 1)],
)  # fmt: skip
def test_a_bad_sampling_value_is_refused_in_one_sentence(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_profile("h", {"sampling": {field: value}}, "Host profile 'h'")
    text = str(caught.value)
    assert text.startswith("Host profile 'h' is invalid: sampling.") and text.count(". ") == 0


def test_command_options_override_the_profile_and_are_checked() -> None:
    parser = argparse.ArgumentParser()
    add_sampling_options(parser)
    profile = parse_profile("h", {"sampling": {"top_p": 0.9}}, "p")
    args = parser.parse_args(["--temperature", "1", "--seed", "7"])
    assert with_sampling(profile, args).sampling == T1
    assert with_sampling(profile, parser.parse_args([])) is profile
    with pytest.raises(ConfigError, match=r"^Sampling top_p: .*\.$"):
        with_sampling(profile, parser.parse_args(["--top-p", "2"]))


def test_seeds_are_derived_per_passage_and_read_and_repeat_exactly() -> None:
    seeds = {T1.request_seed(p, k) for p in ("code@256#0", "code@256#1") for k in range(3)}
    assert len(seeds) == 6 and all(0 <= s < 2**31 for s in seeds)
    assert T1.request_seed("code@256#0", 1) == Sampling(
        temperature=1.0, top_p=0.9, seed=7
    ).request_seed("code@256#0", 1)
    assert T1.request_seed("code@256#0", 0) != T1.model_copy(update={"seed": 8}).request_seed(
        "code@256#0", 0)  # fmt: skip
    assert GREEDY.request_seed("code@256#0", 0) is None
    assert T1.model_copy(update={"seed_policy": "unseeded"}).request_seed("x", 0) is None


def _spec(sampling: Sampling = GREEDY, seed: int | None = None) -> RequestSpec:
    return RequestSpec("code", "code@4#0", 16, input_ids=(1, 2, 3, 4), sampling=sampling,
                       seed=seed)  # fmt: skip


def test_greedy_request_bodies_are_what_they_always_were() -> None:
    for engine in ("builtin", "sglang"):
        params = get_adapter(engine).request_body(_spec(), "m")["sampling_params"]
        assert params == {"temperature": 0, "max_new_tokens": 16, "ignore_eos": True}
    body = get_adapter("vllm").request_body(_spec(), "m")
    assert body["temperature"] == 0 and not {"top_p", "top_k", "seed"} & set(body)


def test_sampled_request_bodies_carry_every_field_in_each_engines_spelling() -> None:
    spec = _spec(T1, seed=1234)
    for engine in ("builtin", "sglang"):
        params = get_adapter(engine).request_body(spec, "m")["sampling_params"]
        assert (params["temperature"], params["top_p"], params["top_k"]) == (1.0, 0.9, -1)
        assert params["sampling_seed"] == 1234  # SGLang's name; ours reads it too
    body = get_adapter("vllm").request_body(spec, "m")
    assert (body["temperature"], body["top_p"], body["top_k"], body["seed"]) == (1.0, 0.9, -1,
                                                                                  1234)  # fmt: skip


def _run(sampling: Sampling) -> SimpleNamespace:
    return SimpleNamespace(info=run_info(sampling=sampling.as_dict()))


def test_history_refuses_two_sampling_settings_in_one_sentence_naming_both() -> None:
    with pytest.raises(HistoryError) as caught:
        check_sampling(_run(GREEDY), _run(T1))  # type: ignore[arg-type]
    text = str(caught.value)
    assert "greedy" in text and "T=1 top-p 0.9 seed 7" in text and "--mixed-sampling" in text
    check_sampling(_run(GREEDY), _run(T1), allow_mixed=True)  # type: ignore[arg-type]
    # a greedy run stored before sampling was recorded is greedy; two base seeds sample
    # one distribution
    old = SimpleNamespace(info=run_info())
    check_sampling(old, _run(GREEDY))  # type: ignore[arg-type]
    assert comparable(T1, T1.model_copy(update={"seed": 99}))
    assert not comparable(T1, T1.model_copy(update={"top_p": 1.0}))


def _sampled(passages: int, reads: int, *, steps_mean: float, seed: int) -> list:
    """Sampled requests: each (passage, read) has its own seed and draws its own steps."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for k in range(reads):
        for p in range(passages):
            t += 1.0
            steps = max(8, round(rng.gauss(steps_mean, 3.0)))
            out.append(dataclasses.replace(
                BASE, prompt_id=f"p{p}", verify_steps=steps, decode_time_s=steps * 0.004,
                t=t, temperature=1.0, seed=T1.request_seed(f"p{p}", k)))  # fmt: skip
    return out


def test_commit_at_temperature_one_gets_an_interval_not_exact() -> None:
    before = _sampled(2, 4, steps_mean=30.0, seed=1)
    after = _sampled(2, 4, steps_mean=30.0, seed=2)
    commit = paired_figures(before, after).figure("commit_len")
    assert not commit.moved.exact and commit.moved.has_interval
    ratio = commit.moved.ratio
    assert ratio.low < ratio.value < ratio.high and math.isfinite(ratio.high)
    assert ratio.low <= 1.0 <= ratio.high  # nothing changed: the interval holds no change


def test_sampled_reads_that_happen_to_agree_are_still_not_exact() -> None:
    # every read of a passage drew the same steps by chance: under greedy this would be
    # exact by construction, sampled it is one draw among many
    same = [dataclasses.replace(s, verify_steps=30, decode_time_s=0.12)
            for s in _sampled(2, 3, steps_mean=30.0, seed=3)]  # fmt: skip
    commit = paired_figures(same, same).figure("commit_len")
    assert not commit.moved.exact
