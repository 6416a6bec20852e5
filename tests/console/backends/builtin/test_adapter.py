"""The builtin adapter: what our engine speculates with, how it is switched off, what its
requests ask for and which /metrics page is its own."""

from __future__ import annotations

from console.backends import get_adapter
from console.backends.request import RequestSpec
from console.backends.wire import parse_metrics

ADAPTER = get_adapter("builtin")
SPEC = RequestSpec("code", "code@4#0", 8, input_ids=(1, 2, 3, 4))


def test_unset_algorithm_is_the_engines_default_ddtree() -> None:
    assert ADAPTER.speculation({"port": 1}).method == "DDTREE"
    on = ADAPTER.speculation({"speculative-algorithm": "DFLASH", "speculative-num-draft-tokens": 8})
    assert (on.method, on.draft_tokens, on.describe()) == ("DFLASH", 8, "DFLASH, 8 draft tokens")
    off = {"speculative-algorithm": "none"}
    assert not ADAPTER.speculating(off) and ADAPTER.speculation(off).describe() == "off"
    assert ADAPTER.speculation_off({"port": 1}) == {"speculative-algorithm": "NONE"}


def test_requests_ask_for_round_stats_and_experiments_may_use_them() -> None:
    body = ADAPTER.request_body(SPEC, "ignored")
    assert body["return_round_stats"] is True and body["input_ids"] == [1, 2, 3, 4]
    assert ADAPTER.request_endpoint == "/generate" and not ADAPTER.scrapes_around_requests
    assert ADAPTER.reports_round_stats and ADAPTER.tree_budget_flag == "speculative-ddtree-budget"


def test_its_own_exposition_is_recognised_before_sglangs_gauges() -> None:
    ours = parse_metrics("specengine:spec_verify_steps_total 3\nsglang:gen_throughput 10\n", t=1.0)
    sglang_only = parse_metrics("sglang:gen_throughput 10\n", t=1.0)
    assert ADAPTER.owns_scrape(ours) and not ADAPTER.owns_scrape(sglang_only)
    assert get_adapter("sglang").owns_scrape(sglang_only)
