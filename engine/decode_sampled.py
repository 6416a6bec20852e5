"""The sampled verify rounds of the Decoder (temperature > 0), beside the greedy ones.

They run the same forwards as the greedy rounds in engine/decode.py; what differs is that
the drafts are drawn from the drafter's distribution at the request's settings and the
accept rule is speculative sampling (engine/spec_sampling.py, where the losslessness
argument is). They live apart so that the greedy rounds stay exactly as they were, and
the Decoder picks one set or the other per request.
"""

from __future__ import annotations

import torch

from engine.drafter import DraftSession
from engine.round_stats import RoundStats
from engine.sampling import sample, warp
from engine.spec_sampling import accept_chain, sample_tree, walk_tree


class SampledRounds:
    """Mixed into the Decoder, whose attributes (target, caches, verify buffers, and the
    running request's `_sampling` and `_gen`) these rounds use."""

    def _pick(self, logits: torch.Tensor) -> int:
        """The next token from one row of target logits: its argmax, or a sample."""
        if self._sampling is None:
            return int(logits.argmax())
        return int(sample(warp(logits, self._sampling), self._gen))

    def _dflash_sampled(self, cache, session: DraftSession, bonus, start, clock):
        dev = self.target.device
        ctx = cache.length
        clock.lap()
        block = min(self.block_size, self._room(start))
        q = warp(session.propose(bonus, start, self.block_size)[: block - 1], self._sampling)
        drafts = sample(q, self._gen)
        draft_ms = clock.lap()
        ids = torch.cat([torch.tensor([bonus], device=dev), drafts])[None]
        pos = torch.arange(start, start + ids.shape[1], device=dev)[None]
        logits, hidden = self.target(ids, pos, cache, output_layers=self.layer_ids)
        p = warp(logits[0], self._sampling)
        verify_ms = clock.lap()
        accepted, nxt = accept_chain(p, q, drafts, self._gen)
        commit = accepted + 1
        cache.crop(start + commit)
        session.add_context([h[:, :commit] for h in hidden])
        tokens = drafts[:accepted].tolist() + [nxt]
        commit_ms = clock.lap()
        return tokens, RoundStats(commit, ctx, draft_ms, 0.0, verify_ms, commit_ms, ids.shape[1])

    def _ddtree_sampled(self, cache, session: DraftSession, bonus, start, clock):
        ctx = cache.length
        clock.lap()
        q = warp(session.propose(bonus, start, self.block_size), self._sampling)
        draft_ms = clock.lap()
        budget = min(self.budget, self._room(start) - 1)
        tree = sample_tree(bonus, q, budget, self._gen)
        ids, pos = self._tree_ids(tree, start)
        mask = self._tree_mask(tree, ctx)
        tree_ms = clock.lap()
        logits, hidden = self.target(ids, pos, cache, attn_mask=mask, output_layers=self.layer_ids)
        p = warp(logits[0], self._sampling)
        verify_ms = clock.lap()
        path, new_bonus = walk_tree(tree, p, q, self._gen)
        cache.compact(ctx, path)
        taps = hidden[0] if len(hidden) == 1 else torch.cat(hidden, dim=-1)
        session.add_context([taps.index_select(1, self._path_ids(path))])
        tokens = [tree.tokens[i] for i in path[1:]] + [new_bonus]
        commit_ms = clock.lap()
        return tokens, RoundStats(
            len(path), ctx, draft_ms, tree_ms, verify_ms, commit_ms, len(tree)
        )
