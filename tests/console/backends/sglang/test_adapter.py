"""The SGLang adapter: speculation from `--speculative-algorithm`, switched off by unsetting
every `speculative-*` flag; the native body without our engine's round stats."""

from __future__ import annotations

from console.backends import get_adapter
from console.backends.request import RequestSpec

ADAPTER = get_adapter("sglang")


def test_speculation_is_the_algorithm_flag() -> None:
    flags = {
        "model-path": "/m",
        "speculative-algorithm": "DFLASH",
        "speculative-draft-model-path": "/d",
        "speculative-num-draft-tokens": "16",
    }
    spec = ADAPTER.speculation(flags)
    assert (spec.method, spec.draft_tokens, spec.drafter) == ("DFLASH", 16, "/d")
    assert ADAPTER.speculation_off(flags) == {
        "speculative-algorithm": None,
        "speculative-draft-model-path": None,
        "speculative-num-draft-tokens": None,
    }
    assert not ADAPTER.speculating({"model-path": "/m", "speculative-algorithm": "None"})


def test_native_body_is_greedy_with_an_exact_length() -> None:
    body = ADAPTER.request_body(RequestSpec("prose", "p", 5, text="hello"), "m")
    assert body["text"] == "hello" and "return_round_stats" not in body
    assert body["sampling_params"] == {"temperature": 0, "max_new_tokens": 5, "ignore_eos": True}
    assert ADAPTER.reports_round_stats is False and ADAPTER.tree_budget_flag is None
