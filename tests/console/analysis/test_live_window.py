"""The live-window summary both faces use: which samples count, the medians, the
inferred text type, and the numbers parser both faces use."""

from __future__ import annotations

import pytest

from console.analysis.decompose import fit
from console.analysis.live_window import closest_type, explain_live, live_window
from console.analysis.records import LiveSample
from console.analysis.verdict import Sweep
from console.numbers import NumberListError, parse_count, parse_counts
from tests.console.tui import fakes


def _s(t: float, tok_s: float, commit: float, ctx: int | None = 1000) -> LiveSample:
    return LiveSample(t=t, source="log", tok_s=tok_s, commit_len=commit,
                      step_time_s=commit / tok_s, context_tokens=ctx)  # fmt: skip


def test_window_takes_the_last_minute_of_samples_with_every_figure() -> None:
    samples = [
        _s(0.0, 500.0, 9.0),  # more than a minute before the newest: left out
        _s(50.0, 100.0, 3.6),
        _s(80.0, 80.0, 2.4),
        _s(100.0, 90.0, 2.4),
        _s(101.0, 400.0, 9.0, ctx=None),  # no context: cannot be placed on the model
        LiveSample(t=102.0, source="metrics", note="no /metrics"),
    ]
    window = live_window(samples)
    assert window is not None
    assert (window.n, window.newest, window.sources) == (3, 100.0, ("log",))
    assert (window.tok_s, window.commit, window.context) == (90.0, 2.4, 1000.0)
    assert window.as_dict()["step"] == window.step_s
    assert "90.0 tok/s at context 1000, commit 2.40" in window.text("prose")
    assert live_window(samples[-2:]) is None


def test_the_text_type_is_inferred_from_the_commit_length() -> None:
    samples = fakes.sweep_samples()
    model = fit(samples)
    assert closest_type(model, 3.5, 500) == "code"
    assert closest_type(model, 2.3, 500) == "prose"
    window = live_window([_s(1.0, 60.0, 2.3, ctx=800)])
    judged = explain_live(Sweep(tuple(samples)), window)
    assert judged.inferred and judged.text_type == "prose"
    assert judged.verdict.observed.tok_s == 60.0
    forced = explain_live(Sweep(tuple(samples)), window, text_type="code")
    assert not forced.inferred and forced.text_type == "code"


def test_one_parser_for_typed_counts() -> None:
    assert parse_counts("64, 512,1k", "Contexts") == [64, 512, 1000]
    assert parse_count(" 3 ", "Repeat") == 3
    with pytest.raises(NumberListError, match="Max tokens must be a whole number, not 'x'"):
        parse_count("x", "Max tokens")
    with pytest.raises(NumberListError, match="at least 1, not 0"):
        parse_counts("64,0", "Contexts")
    with pytest.raises(NumberListError, match="needs at least one number"):
        parse_counts(" , ", "Contexts")
