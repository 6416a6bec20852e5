"""The per-sequence halves of a batched verify round (engine/batch.py runs them).

A batched round drafts for every sequence, then `plan_*` turns each sequence's draft
logits into the rows it verifies (an AR token, a DFlash block, a DDTree tree) as a
Segment of the packed forward, and after that one forward `settle_*` applies the
sequence's own accept rule to its rows of the logits: exactly the steps of the
single-sequence rounds in engine/decode.py (greedy) and engine/decode_sampled.py
(sampled), with the same draws from the sequence's own generator in the same order, so a
sequence commits what it would alone. Each returns the committed tokens (accepted drafts
then the new bonus) and the number of rows it verified.
"""

from __future__ import annotations

import torch

from engine.packed import Segment
from engine.sampling import sample, warp
from engine.spec_sampling import accept_chain, sample_tree, walk_tree
from engine.tree import build_tree, follow_verified


def plan_ar(seq, draft_logits, decoder) -> Segment:
    dev = decoder.target.device
    ids = torch.tensor([[seq.bonus]], device=dev)
    return Segment(ids, torch.tensor([[seq.start]], device=dev), seq.cache)


def settle_ar(seq, logits, taps) -> tuple[list[int], int]:
    return [seq.pick(logits[-1])], 1


def plan_dflash(seq, draft_logits, decoder) -> Segment:
    dev = decoder.target.device
    block = min(decoder.block_size, decoder.max_context - seq.start)
    q = draft_logits[: block - 1]
    if seq.sampling is None:
        drafts, q = q.argmax(-1), None
    else:
        q = warp(q, seq.sampling)
        drafts = sample(q, seq.gen)
    seq.plan = (drafts, q)
    ids = torch.cat([torch.tensor([seq.bonus], device=dev), drafts])[None]
    pos = torch.arange(seq.start, seq.start + ids.shape[1], device=dev)[None]
    return Segment(ids, pos, seq.cache)


def settle_dflash(seq, logits, taps) -> tuple[list[int], int]:
    drafts, q = seq.plan
    if q is None:
        post = logits.argmax(-1)
        accepted = int((drafts == post[:-1]).int().cumprod(0).sum())
        nxt = int(post[accepted])
    else:
        accepted, nxt = accept_chain(warp(logits, seq.sampling), q, drafts, seq.gen)
    commit = accepted + 1
    seq.cache.crop(seq.start + commit)
    seq.session.add_context([taps[:, :commit]])
    return drafts[:accepted].tolist() + [nxt], len(drafts) + 1


def plan_ddtree(seq, draft_logits, decoder) -> Segment:
    budget = min(decoder.budget, decoder.max_context - seq.start - 1)
    if seq.sampling is None:
        tree, q = build_tree(seq.bonus, draft_logits, budget), None
    else:
        q = warp(draft_logits, seq.sampling)
        tree = sample_tree(seq.bonus, q, budget, seq.gen)
    seq.plan = (tree, q)
    ids, pos = seq.tree_ids(tree, seq.start)
    return Segment(ids, pos, seq.cache, seq.tree_mask(tree, seq.cache.length))


def settle_ddtree(seq, logits, taps) -> tuple[list[int], int]:
    tree, q = seq.plan
    if q is None:
        path, bonus = follow_verified(tree, logits.argmax(-1).tolist())
    else:
        path, bonus = walk_tree(tree, warp(logits, seq.sampling), q, seq.gen)
    seq.cache.compact(seq.cache.length - len(tree), path)
    if path[-1] == len(path) - 1:  # the accepted path is a prefix of node order
        seq.session.add_context([taps[:, : len(path)]])
    else:
        seq.session.add_context([taps.index_select(1, seq.path_ids(path))])
    return [tree.tokens[i] for i in path[1:]] + [bonus], len(tree)


PLANS = {"ar": plan_ar, "dflash": plan_dflash, "ddtree": plan_ddtree}
SETTLES = {"ar": settle_ar, "dflash": settle_dflash, "ddtree": settle_ddtree}
