"""KV compaction after a tree verify must leave exactly an AR cache of the committed tokens."""

from __future__ import annotations

import pytest
import torch

from engine.checkpoint import load_bundle
from engine.kvcache import KVCache
from engine.tree import build_tree
from engine.verify_inputs import TreeMask

PROMPT = [ord(c) for c in "import sys\nprint(sys.argv)\n"]


@pytest.fixture(scope="module")
def bundle(tiny_pair):
    return load_bundle(*tiny_pair)


@pytest.mark.parametrize("path_choice", ["deep_branch", "root_only", "first_chain"])
def test_compaction_matches_ar_forward(bundle, path_choice):
    target = bundle.target
    n = len(PROMPT)
    layers = list(range(target.config.num_hidden_layers))
    with torch.inference_mode():
        cache = target.new_cache(256)
        target(torch.tensor([PROMPT]), torch.arange(n)[None], cache)
        tree = build_tree(
            PROMPT[-1] ^ 1,
            torch.randn(5, target.config.vocab_size, generator=torch.Generator().manual_seed(0)),
            24,
        )
        mask = TreeMask(target.dtype, "cpu")(tree, n)
        _, hidden = target(
            torch.tensor([tree.tokens]),
            tree.position_ids(n, "cpu"),
            cache,
            attn_mask=mask,
            output_layers=layers,
        )
        assert cache.length == n + len(tree)
        # Pick an accepted root-to-node path.
        deepest = max(
            range(len(tree)),
            key=lambda i: (tree.depths[i], -i) if tree.parents[i] != 0 or True else 0,
        )
        if path_choice == "root_only":
            node = 0
        elif path_choice == "first_chain":
            node = max(
                i
                for i in range(len(tree))
                if all(tree.parents[j] == j - 1 for j in range(1, i + 1))
            )
        else:
            node = (
                next(i for i in reversed(range(len(tree))) if tree.parents[i] not in (0, i - 1))
                if any(tree.parents[i] not in (0, i - 1) for i in range(1, len(tree)))
                else deepest
            )
        path = [node]
        while tree.parents[path[-1]] >= 0:
            path.append(tree.parents[path[-1]])
        path.reverse()
        cache.compact(n, path)
        assert cache.length == n + len(path)

        committed = PROMPT + [tree.tokens[i] for i in path]
        ref = target.new_cache(256)
        _, ref_hidden = target(
            torch.tensor([committed]), torch.arange(len(committed))[None], ref, output_layers=layers
        )
    for layer in range(target.config.num_hidden_layers):
        k, v = cache.layer(layer)
        rk, rv = ref.layer(layer)
        torch.testing.assert_close(k, rk, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(v, rv, atol=1e-5, rtol=1e-4)
        # The hidden states kept as the next draft context are AR-exact too.
        torch.testing.assert_close(
            hidden[layer][:, path], ref_hidden[layer][:, n:], atol=1e-5, rtol=1e-4
        )


def test_cache_guards():
    c = KVCache(1, 1, 2, 8)
    k = torch.ones(1, 1, 3, 2)
    c.append(0, k, k)
    c.commit_append()
    with pytest.raises(ValueError):
        c.crop(4)
    with pytest.raises(ValueError, match="strictly increasing"):
        c.compact(0, [1, 1])
    with pytest.raises(ValueError, match="beyond"):
        c.compact(1, [0, 2])
    c.append(0, k, k)
    c.commit_append()
    with pytest.raises(ValueError, match="capacity"):
        c.append(0, k, k)


@pytest.mark.parametrize("seed", range(6))
def test_compact_equals_a_gather_of_the_kept_rows(seed):
    """Compaction keeps rows past+keep[i] at past+i, for prefixes of node order (which
    move nothing and skip the order check) and for branching paths alike, bit for bit."""
    g = torch.Generator().manual_seed(seed)
    past, tail = 5, 16
    c = KVCache(2, 2, 4, 64)
    for layer in range(2):
        k = torch.randn(1, 2, past + tail, 4, generator=g)
        c.append(layer, k, -k)
    c.commit_append()
    keys, values = c.keys[:, :, :, : past + tail].clone(), c.values[:, :, :, : past + tail].clone()
    n = int(torch.randint(1, tail + 1, (), generator=g))
    if seed % 2:  # a prefix of node order
        keep = list(range(n))
    else:  # strictly increasing from the root
        keep = [0] + sorted(torch.randperm(tail - 1, generator=g)[: n - 1].add(1).tolist())
    c.compact(past, keep)
    rows = list(range(past)) + [past + i for i in keep]
    assert c.length == past + len(keep)
    assert torch.equal(c.keys[:, :, :, : c.length], keys[:, :, :, rows])
    assert torch.equal(c.values[:, :, :, : c.length], values[:, :, :, rows])


def test_cache_grows_in_chunks_and_keeps_rows():
    c = KVCache(2, 1, 2, 20, chunk=8)
    assert c.allocated == 0 and c.nbytes == 0
    assert c.max_nbytes == 20 * c.row_bytes == 20 * 2 * 2 * 1 * 2 * 4
    rows = torch.arange(2 * 14, dtype=torch.float32).reshape(1, 1, 14, 2)
    for start, end in ((0, 5), (5, 9), (9, 14)):
        for layer in range(2):
            k, v = c.append(layer, rows[:, :, start:end], -rows[:, :, start:end])
            assert k.shape[2] == end
        c.commit_append()
        assert c.allocated == min(20, -(-end // 8) * 8)  # whole chunks, capped at capacity
    k, v = c.layer(1)
    torch.testing.assert_close(k, rows)
    torch.testing.assert_close(v, -rows)
    c.compact(4, [0, 2, 5])  # rows 4, 6, 9 move to 4, 5, 6
    torch.testing.assert_close(c.layer(0)[0][:, :, 4:], rows[:, :, [4, 6, 9]])
    c.append(0, rows[:, :, :6], rows[:, :, :6])
    c.commit_append()
    assert c.length == 13 and c.allocated == 16
    with pytest.raises(ValueError, match="capacity"):
        c.append(0, rows[:, :, :8], rows[:, :, :8])
    assert c.allocated == 16  # a refused append leaves the cache as it was


def test_request_memory_follows_its_length(bundle):
    """A short request in a long context allocates whole chunks of what it uses, not the context."""
    from engine.decode import Decoder
    from engine.kvcache import KV_CHUNK_TOKENS

    dec = Decoder(bundle.target, bundle.drafter, method="ddtree", max_context=4096)
    info = dec.kv_cache_info()
    assert info["kv_cache_tokens"] == 0 and info["kv_cache_bytes"] == 0
    assert info["kv_cache_max_tokens"] == 4096
    steps = dec.stream(PROMPT, max_new_tokens=20)
    next(steps)
    live = dec.kv_cache_info()
    assert live["kv_cache_tokens"] == KV_CHUNK_TOKENS and live["kv_cache_used_tokens"] == len(
        PROMPT
    )
    assert 0 < live["kv_cache_bytes"] < info["kv_cache_max_bytes"]
    steps.close()
    assert dec.kv_cache_info()["kv_cache_tokens"] == 0
    g = dec.generate(PROMPT, max_new_tokens=20)
    target_rows = KV_CHUNK_TOKENS  # prompt + 20 tokens + a verify block fit in one chunk
    row = bundle.target.new_cache(1).row_bytes
    assert g.kv_cache_bytes >= target_rows * row
    assert g.kv_cache_bytes < info["kv_cache_max_bytes"] / 8
    assert dec.kv_cache_info()["kv_cache_last_request_bytes"] == g.kv_cache_bytes
