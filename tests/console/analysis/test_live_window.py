"""The live-window summary both faces use: which samples count, the medians, the
inferred text type, and the numbers parser both faces use."""

from __future__ import annotations

from dataclasses import replace

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
        _s(50.0, 85.0, 2.4),
        _s(80.0, 80.0, 2.4),
        _s(100.0, 90.0, 2.4),
        _s(101.0, 400.0, 9.0, ctx=None),  # no context: cannot be placed on the model
        LiveSample(t=102.0, source="metrics", note="no /metrics"),
    ]
    window = live_window(samples)
    assert window is not None
    assert (window.n, window.newest, window.sources) == (3, 100.0, ("log",))
    assert (window.tok_s, window.commit, window.context) == (85.0, 2.4, 1000.0)
    assert window.as_dict()["step"] == window.step_s
    assert "85.0 tok/s at mid-decode context 1000, commit 2.40" in window.text("prose")
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


def test_a_window_over_two_contexts_is_split_never_averaged_across_them() -> None:
    # Two kinds of traffic alternate in the minute: prompts at 300 and at 1700 tokens.
    # Their medians together describe a context no request ran at (~1000).
    samples = []
    for i in range(10):
        samples.append(_s(2.0 * i, 1000.0 + i, 3.6, ctx=300 + i))
        samples.append(_s(2.0 * i + 1, 500.0 + i, 3.6, ctx=1700 + 5 * i))
    window = live_window(samples)
    assert window is not None
    assert window.n == 10 and 1700 <= window.context <= 1750  # the newest sample's group
    assert 500 <= window.tok_s < 510
    assert [(g.n, round(g.context)) for g in window.others] == [(10, 304)]
    assert "not averaged in" in window.text("code") and "10 at context 304" in window.text("code")


def test_a_window_over_two_texts_at_one_context_is_split_by_commit() -> None:
    samples = [_s(float(i), 300.0, 3.6 if i % 2 else 2.4, ctx=800 + i) for i in range(12)]
    window = live_window(samples)
    assert window is not None
    assert window.n == 6 and window.commit == 3.6  # the newest (i = 11) read code
    assert [round(g.commit, 1) for g in window.others] == [2.4]


def test_one_request_whose_context_grows_through_the_decode_stays_one_group() -> None:
    samples = [_s(float(i), 300.0 - i, 3.0, ctx=1000 + 40 * i) for i in range(20)]
    window = live_window(samples)
    assert window is not None and window.n == 20 and window.others == ()


def test_a_minute_alone_and_a_minute_under_a_batch_are_two_groups_and_the_batch_is_refused() -> (
    None
):
    # Alone: 100 tok/s, commit 2.4. Then a batch of 4: 320 tok/s summed, each stream 80
    # (the batch's rounds cost more), the same commit and context.
    alone = [replace(_s(t, 100.0, 2.4), batch=1.0) for t in (10.0, 20.0, 30.0)]
    batched = [replace(_s(t, 320.0, 2.4), step_time_s=2.4 / 80.0, batch=4.0)
               for t in (40.0, 50.0, 60.0)]  # fmt: skip
    window = live_window(alone + batched)
    assert window is not None and window.n == 3 and window.batched
    assert window.tok_s == pytest.approx(80.0)  # one stream's, as the model of one request
    assert [g.tok_s for g in window.others] == [pytest.approx(100.0)]  # kept apart
    assert window.as_dict()["batch"] == 4.0
    judged = explain_live(Sweep(tuple(fakes.sweep_samples())), window, text_type="prose")
    assert judged.verdict.outcome == "not enough evidence"
    assert "4.0 requests at a time" in judged.verdict.headline
    assert "specconsole load" in judged.verdict.headline
    # the minute alone is read as before
    quiet = live_window(alone)
    assert quiet is not None and not quiet.batched and quiet.tok_s == 100.0
    assert (
        "requests at a time"
        not in explain_live(
            Sweep(tuple(fakes.sweep_samples())), quiet, text_type="prose"
        ).verdict.headline
    )
