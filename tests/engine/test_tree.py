"""DDTree construction: budget, topology, visibility mask, optimality."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from engine.tree import build_tree, follow_verified
from engine.verify_inputs import TreeIds, TreeMask


def prefixes(tree):
    """Token tuple of each node's prefix (root excluded from the tuple)."""
    out = [()]
    for i in range(1, len(tree.tokens)):
        out.append((*out[tree.parents[i]], tree.tokens[i]))
    return out


def ancestors_or_self(tree, i):
    s = {i}
    while tree.parents[i] >= 0:
        i = tree.parents[i]
        s.add(i)
    return s


@pytest.mark.parametrize("budget", [1, 3, 7, 8, 20, 64, 100])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_invariants(budget, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(5, 11, generator=g) * 3
    tree = build_tree(99, logits, budget)
    available = sum(11**d for d in range(1, 6))
    assert len(tree) - 1 == min(budget, available)
    assert tree.tokens[0] == 99 and tree.parents[0] == -1 and tree.depths[0] == 0
    for i in range(1, len(tree)):
        p = tree.parents[i]
        assert 0 <= p < i, "parent must precede child"
        assert tree.depths[i] == tree.depths[p] + 1
        assert tree.child_maps[p][tree.tokens[i]] == i
    # Pop order is best-first: prefix probabilities never increase.
    lp = tree.log_probs[1:]
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(lp))
    # Prefix-closed, and no prefix appears twice.
    pre = prefixes(tree)
    assert len(set(pre)) == len(pre)
    assert all(p[:-1] in set(pre) for p in pre[1:])
    # Visibility is exactly ancestor-or-self.
    for i in range(len(tree)):
        want = ancestors_or_self(tree, i)
        got = {j for j in range(len(tree)) if tree.visibility[i, j]}
        assert got == want


@pytest.mark.parametrize("budget", [1, 5, 12, 30])
def test_tree_equals_brute_force_top_prefixes(budget):
    g = torch.Generator().manual_seed(budget)
    depth, vocab = 3, 4
    logits = torch.randn(depth, vocab, generator=g) * 2
    logp = torch.log_softmax(logits, -1)
    scored = []
    for d in range(1, depth + 1):
        for seq in itertools.product(range(vocab), repeat=d):
            scored.append((sum(logp[i, t].item() for i, t in enumerate(seq)), seq))
    scored.sort(reverse=True)
    want = {seq for _, seq in scored[:budget]}
    tree = build_tree(0, logits, budget)
    assert set(prefixes(tree)[1:]) == want
    # Node log-probabilities are the true prefix log-probabilities.
    for lpv, pre in zip(tree.log_probs[1:], prefixes(tree)[1:], strict=True):
        assert math.isclose(
            lpv, sum(logp[i, t].item() for i, t in enumerate(pre)), rel_tol=1e-5, abs_tol=1e-5
        )


def test_budget_equal_to_depth_with_dominant_top1_is_the_greedy_chain():
    logits = torch.zeros(6, 20)
    chain = [3, 7, 1, 9, 4, 2]
    for d, t in enumerate(chain):
        logits[d, t] = 20.0
    tree = build_tree(5, logits, budget=6)
    assert tree.tokens == [5, *chain]
    assert tree.parents == [-1, 0, 1, 2, 3, 4, 5]


def test_attention_mask_and_positions():
    logits = torch.randn(4, 6, generator=torch.Generator().manual_seed(3))
    tree = build_tree(1, logits, 9)
    m = TreeMask(torch.float32, "cpu")(tree, past_len=5)  # [1, 1, N, past+N]
    n = len(tree)
    assert m.shape == (1, 1, n, 5 + n)
    assert (m[0, 0, :, :5] == 0).all(), "the committed past is visible to every node"
    vis = torch.from_numpy(tree.visibility)
    assert ((m[0, 0, :, 5:] == 0) == vis).all()
    assert tree.position_ids(10, "cpu")[0].tolist() == [10 + d for d in tree.depths]


# (budget, past) per round: a shift of 1, of N-1, none, past a whole block, back to an
# earlier past, a jump across the buffer's initial 256 columns (it grows), other sizes.
ROUNDS = [(9, 3), (2, 4), (15, 5), (15, 6), (15, 21), (15, 21), (15, 60), (15, 40), (15, 41)]
ROUNDS += [(15, 300), (0, 301), (40, 302), (6, 600), (6, 604), (1, 605), (12, 606), (12, 700)]


@pytest.mark.parametrize("groups", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])  # bytes written / torch ops
def test_reused_mask_and_ids_equal_fresh_ones_every_round(dtype, groups):
    """The per-request buffers only rewrite what a round touches: what an earlier, larger
    or shifted tree left behind must never show through, and growth must keep it. With
    query-head groups the mask is the fresh one repeated per group, as attention folds it;
    the same size of tree several rounds running reuses the buffers."""
    g = torch.Generator().manual_seed(5)
    masks = TreeMask(dtype, "cpu", groups)
    assert (masks.seen is not None) == (dtype == torch.float32)
    tree_ids = TreeIds("cpu")
    for budget, past in ROUNDS:
        tree = build_tree(1, torch.randn(6, 50, generator=g) * 2, budget)
        got = masks(tree, past)
        n = len(tree)
        fresh = torch.zeros(n, past + n, dtype=dtype)
        fresh[:, past:].masked_fill_(~torch.from_numpy(tree.visibility), torch.finfo(dtype).min)
        assert torch.equal(got, fresh.repeat(groups, 1)[None, None]), (budget, past)
        assert torch.equal(
            masks.buf[:, :, past + n :], torch.zeros_like(masks.buf[:, :, past + n :])
        )
        ids, pos = tree_ids(tree, past)
        assert ids.tolist() == [tree.tokens], budget
        assert torch.equal(pos, tree.position_ids(past, "cpu")), budget
    assert masks.buf.shape[2] > 256


def test_follow_verified_walks_matching_children():
    logits = torch.zeros(3, 5)
    logits[0, 2], logits[0, 4] = 5.0, 4.0
    logits[1, 1] = 5.0
    logits[2, 3] = 5.0
    tree = build_tree(0, logits, budget=8)
    node_of = {p: i for i, p in enumerate(prefixes(tree))}
    argmax = [0] * len(tree)
    argmax[0] = 4  # target prefers the second-ranked sibling
    argmax[node_of[(4,)]] = 1
    argmax[node_of[(4, 1)]] = 2  # not drafted under (4, 1) -> becomes the bonus
    path, bonus = follow_verified(tree, argmax)
    assert [tree.tokens[i] for i in path[1:]] == [4, 1]
    assert bonus == 2
    assert path == sorted(path)
