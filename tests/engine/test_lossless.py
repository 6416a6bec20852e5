"""DFlash and DDTree must emit exactly what greedy autoregressive decoding emits."""

from __future__ import annotations

import pytest
import torch

from engine.checkpoint import DEFAULT_DRAFTER_PATH, load_bundle
from engine.decode import Decoder
from engine.tiny import make_random_pair
from tests.engine.helpers import OracleDecoder

PROMPT = [ord(c) for c in "def add(a, b):\n    return a + b\n\nclass "]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """One random pair per block size (the drafter's trained block)."""
    out = {}
    for block in (4, 8, 16):
        t, d = make_random_pair(tmp_path_factory.mktemp(f"b{block}"), seed=block, block_size=block)
        out[block] = load_bundle(t, d)
    return out


def reference(bundle, n, **kw):
    return Decoder(bundle.target, method="ar", **kw).generate(PROMPT, max_new_tokens=n)


@pytest.mark.parametrize("block", [4, 8, 16])
@pytest.mark.parametrize("budget_kind", ["one", "depth", "4x_depth", "64"])
def test_oracle_drafts_are_lossless_for_all_budgets(pairs, block, budget_kind):
    b = pairs[block]
    depth = block - 1
    budget = {"one": 1, "depth": depth, "4x_depth": 4 * depth, "64": 64}[budget_kind]
    ref = reference(b, 60)
    full = PROMPT + ref.tokens
    for method in ("dflash", "ddtree"):
        dec = OracleDecoder(b.target, b.drafter, method=method, budget=budget, full_sequence=full)
        got = dec.generate(PROMPT, max_new_tokens=60)
        assert got.tokens == ref.tokens, method
        assert (
            sum(r.commit_len for r in got.rounds) == len(got.tokens) - 1
            or got.finish_reason == "length"
        )
        if method == "ddtree" and budget >= depth:
            # With a real budget the oracle's chains get accepted: many tokens per round.
            assert got.commit_mean > 2.0


@pytest.mark.parametrize("block", [4, 8, 16])
def test_trained_shape_drafter_is_lossless(pairs, block):
    b = pairs[block]
    ref = reference(b, 48)
    for method, budget in (("dflash", None), ("ddtree", 1), ("ddtree", block - 1), ("ddtree", 64)):
        got = Decoder(b.target, b.drafter, method=method, budget=budget).generate(
            PROMPT, max_new_tokens=48
        )
        assert got.tokens == ref.tokens, (method, budget)


def test_tree_beats_chain_on_second_ranked_drafts(pairs):
    """The oracle puts some true tokens at rank 2: a tree must accept more than the chain."""
    b = pairs[16]
    full = PROMPT + reference(b, 80).tokens
    chain = OracleDecoder(b.target, b.drafter, method="dflash", full_sequence=full).generate(
        PROMPT, max_new_tokens=80
    )
    tree = OracleDecoder(
        b.target, b.drafter, method="ddtree", budget=64, full_sequence=full
    ).generate(PROMPT, max_new_tokens=80)
    assert tree.tokens == chain.tokens
    assert tree.commit_mean > chain.commit_mean


def test_eos_stops_early_and_is_included(pairs):
    b = pairs[8]
    ref = reference(b, 60)
    eos = ref.tokens[17]
    cut = ref.tokens.index(eos) + 1
    full = PROMPT + ref.tokens
    for method in ("ar", "dflash", "ddtree"):
        dec = OracleDecoder(b.target, b.drafter, method=method, budget=32, full_sequence=full)
        got = dec.generate(PROMPT, max_new_tokens=60, eos_token_ids=[eos])
        assert got.tokens == ref.tokens[:cut], method
        assert got.finish_reason == "stop"
        ignored = dec.generate(PROMPT, max_new_tokens=60, eos_token_ids=[eos], ignore_eos=True)
        assert ignored.tokens == ref.tokens and ignored.finish_reason == "length"


@pytest.mark.parametrize("n", [1, 2, 5, 33])
def test_max_new_tokens_cut(pairs, n):
    b = pairs[16]
    ref = reference(b, 40)
    full = PROMPT + ref.tokens
    for method in ("ar", "dflash", "ddtree"):
        got = OracleDecoder(
            b.target, b.drafter, method=method, budget=40, full_sequence=full
        ).generate(PROMPT, max_new_tokens=n)
        assert got.tokens == ref.tokens[:n], method
        assert got.finish_reason == "length"


def test_draft_window_smaller_than_context(pairs):
    b = pairs[8]
    ref = reference(b, 50)
    for window in (8, 12):
        assert window < len(PROMPT)
        for method in ("dflash", "ddtree"):
            got = Decoder(
                b.target, b.drafter, method=method, budget=24, draft_window=window
            ).generate(PROMPT, max_new_tokens=50)
            assert got.tokens == ref.tokens


def test_draft_window_changes_what_the_drafter_sees(pairs):
    """The window must actually bound the drafter's context, not be ignored."""
    b = pairs[8]
    full_ctx = Decoder(b.target, b.drafter, method="ddtree", budget=8)
    windowed = Decoder(b.target, b.drafter, method="ddtree", budget=8, draft_window=8)
    s_full, s_win = full_ctx.new_draft_session(), windowed.new_draft_session()
    with torch.inference_mode():
        ids = torch.tensor([PROMPT])
        _, hidden = b.target(
            ids, torch.arange(len(PROMPT))[None], output_layers=b.drafter.target_layer_ids
        )
        s_full.add_context(hidden)
        s_win.add_context(hidden)
        a = s_full.propose(PROMPT[-1], len(PROMPT), 8)
        w = s_win.propose(PROMPT[-1], len(PROMPT), 8)
    assert not torch.allclose(a, w)


def test_context_limit_stops_with_length(pairs):
    b = pairs[8]
    limit = len(PROMPT) + 13
    ref = Decoder(b.target, method="ar", max_context=limit).generate(PROMPT, max_new_tokens=100)
    assert len(ref.tokens) == 13 and ref.finish_reason == "length"
    full = PROMPT + ref.tokens
    for method in ("dflash", "ddtree"):
        got = OracleDecoder(
            b.target, b.drafter, method=method, budget=30, max_context=limit, full_sequence=full
        ).generate(PROMPT, max_new_tokens=100)
        assert got.tokens == ref.tokens
        assert got.finish_reason == "length"
        assert all(r.context_len + r.tree_nodes <= limit for r in got.rounds)


def test_round_stats_add_up(pairs):
    b = pairs[8]
    g = Decoder(b.target, b.drafter, method="ddtree", budget=16).generate(PROMPT, max_new_tokens=30)
    commits = [r.commit_len for r in g.rounds]
    # Every round but the last is emitted whole; the last may be cut by max_new_tokens.
    assert sum(commits[:-1]) < g.decode_tokens <= sum(commits)
    ctx = [r.context_len for r in g.rounds]
    assert ctx[0] == len(PROMPT)
    # Each round starts where the previous one's commits left the cache.
    for prev, cur in zip(g.rounds, g.rounds[1:], strict=False):
        assert cur.context_len == prev.context_len + prev.commit_len
    assert all(r.step_ms > 0 and 1 <= r.commit_len <= 8 and r.tree_nodes <= 17 for r in g.rounds)


def test_bad_arguments_are_refused(pairs):
    b = pairs[8]
    with pytest.raises(ValueError, match="unknown method"):
        Decoder(b.target, b.drafter, method="medusa")
    with pytest.raises(ValueError, match="needs a drafter"):
        Decoder(b.target, None, method="ddtree")
    dec = Decoder(b.target, b.drafter, method="ddtree", max_context=20)
    with pytest.raises(ValueError, match="no room"):
        dec.generate(list(range(20)), max_new_tokens=4)
    with pytest.raises(ValueError, match="at least 1"):
        dec.generate([1, 2], max_new_tokens=0)


@pytest.mark.skipif(
    not (DEFAULT_DRAFTER_PATH / "config.json").exists(), reason="bundled weights not trained yet"
)
def test_bundled_pair_is_lossless():
    """The trained pair accepts long drafts; outputs must still equal AR exactly."""
    b = load_bundle()
    for prompt in ("def read_config(path):\n", "The weather today is"):
        ids = b.tokenizer.encode(prompt)
        ref = Decoder(b.target, method="ar").generate(ids, max_new_tokens=64, ignore_eos=True)
        for method, budget in (("dflash", None), ("ddtree", 16), ("ddtree", 64)):
            got = Decoder(b.target, b.drafter, method=method, budget=budget).generate(
                ids, max_new_tokens=64, ignore_eos=True
            )
            assert got.tokens == ref.tokens, (prompt, method, budget)


@pytest.mark.parametrize("chunk", [1, 3, 7])
def test_lossless_while_the_cache_grows(pairs, monkeypatch, chunk):
    """Tiny chunks make the KV caches (target and drafter) grow inside prefill, inside
    tree verifies and across compactions; the tokens must not change."""
    import engine.kvcache

    b = pairs[8]
    ref = reference(b, 60)
    full = PROMPT + ref.tokens
    monkeypatch.setattr(engine.kvcache, "KV_CHUNK_TOKENS", chunk)
    assert reference(b, 60).tokens == ref.tokens
    for method, budget in (("dflash", None), ("ddtree", 7), ("ddtree", 30)):
        got = Decoder(b.target, b.drafter, method=method, budget=budget).generate(
            PROMPT, max_new_tokens=60
        )
        assert got.tokens == ref.tokens, (method, budget)
        oracle = OracleDecoder(
            b.target, b.drafter, method=method, budget=budget, full_sequence=full
        )
        assert oracle.generate(PROMPT, max_new_tokens=60).tokens == ref.tokens, (method, budget)
