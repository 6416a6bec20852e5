"""The baseline's points per host profile (`[baseline]`) and per run (`set --baseline-*`),
with a long context near the context length by default, clamped so the output fits."""

from __future__ import annotations

import pytest

from console.commands.baseline_options import baseline_overrides
from console.config import load_profile, parse_profile, save_profile
from console.errors import ConfigError
from console.experiments.baseline import baseline_plan, default_contexts
from console.measure.session import MeasureError


def test_the_default_baseline_includes_a_long_context_near_the_limit() -> None:
    assert default_contexts(2048, 96) == [256, 1792]
    assert default_contexts(None, 96) == [256]
    plan = baseline_plan(None, 2048)
    assert plan.contexts == (256, 1792) and plan.output == 96 and plan.repeat == 3
    assert plan.text_types == ("code", "prose") and plan.notes == ()


def test_a_profile_baseline_is_parsed_saved_and_clamped_to_fit() -> None:
    profile = parse_profile("gpu1", {"baseline": {"contexts": [4096, 256, 256], "output": 128,
                                                  "text_types": ["prose"], "repeat": 5}},
                            "test")  # fmt: skip
    assert profile.baseline.contexts == [256, 4096]
    save_profile(profile)
    assert load_profile("gpu1").baseline == profile.baseline
    plan = baseline_plan(profile.baseline, 2048)
    assert plan.contexts == (256, 1920) and plan.output == 128 and plan.repeat == 5
    assert "clamped to 1920" in plan.notes[0]
    # per run, the `set` options win over the profile
    plan = baseline_plan(profile.baseline, 2048, contexts=[64], output=32, text_types=["code"])
    assert (plan.contexts, plan.output, plan.text_types) == ((64,), 32, ("code",))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"contexts": []}, "at least one context"),
        ({"contexts": [0, 256]}, "at least 1 token"),
        ({"output": 0}, "baseline.output"),
        ({"text_types": [" "]}, "at least one text type"),
        ({"repeats": 3}, "baseline.repeats"),
    ],
)
def test_a_bad_profile_baseline_is_one_sentence(table: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_profile("gpu1", {"baseline": table}, "Host profile gpu1.toml")


def test_an_output_that_leaves_no_room_is_refused() -> None:
    with pytest.raises(MeasureError, match="smaller --baseline-output"):
        baseline_plan(None, 512, output=512)


def test_set_options_become_overrides() -> None:
    from console.cli import build_parser

    args = build_parser().parse_args(
        ["set", "local", "draft-window=8", "--baseline-contexts", "256,1k",
         "--baseline-output", "64", "--baseline-text", "prose"]
    )  # fmt: skip
    assert baseline_overrides(args) == {"contexts": [256, 1000], "output": 64,
                                        "text_types": ["prose"]}  # fmt: skip
    plain = build_parser().parse_args(["set", "local", "draft-window=8"])
    assert baseline_overrides(plain) == {}
