"""partial_tag_len: the one "hold back a possible tag start" rule the streaming parts share
(reasoning and tool-call parsing, stop strings)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.serve.detokenizer import partial_tag_len


def test_holds_the_longest_suffix_that_starts_the_tag():
    assert partial_tag_len("abc<thi", "<think>") == 4
    assert partial_tag_len("abc<", "<think>") == 1
    assert partial_tag_len("<<", "<<x") == 2


def test_holds_nothing_without_a_partial_tag():
    assert partial_tag_len("abc", "<think>") == 0
    assert partial_tag_len("", "<think>") == 0
    assert partial_tag_len("abc", "") == 0


def test_a_complete_tag_is_not_held():
    # Only proper prefixes count: a whole tag is found by the caller, not held back.
    assert partial_tag_len("x<think>", "<think>") == 0
    assert partial_tag_len("stop", "stop") == 0  # no proper prefix ("s", "st", "sto") ends it
    assert partial_tag_len("aa", "aa") == 1  # but its last "a" may start the next "aa"


@given(st.text(alphabet="ab<>", max_size=12), st.text(alphabet="ab<>", max_size=6))
def test_matches_the_definition(text, tag):
    proper = [n for n in range(1, len(tag)) if text.endswith(tag[:n])]
    assert partial_tag_len(text, tag) == max(proper, default=0)
