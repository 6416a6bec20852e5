"""Test-only drafters: an oracle that knows the true continuation, so that the decode
loops are exercised with real acceptance (random drafters almost never get accepted)."""

from __future__ import annotations

import torch

from engine.decode import Decoder


class OracleSession:
    """Proposes the true next tokens at rank 0, rank 1 or not at all, chosen pseudo-randomly
    per (round, position): chains, side branches and rejections all happen."""

    def __init__(self, full_sequence: list[int], vocab: int, seed: int = 0):
        self.seq = full_sequence
        self.vocab = vocab
        self.seed = seed

    def add_context(self, hidden) -> None:  # the oracle needs no target features
        pass

    def propose(self, bonus: int, start: int, block_size: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed * 7919 + start)
        logits = torch.randn(block_size - 1, self.vocab, generator=g)
        for i in range(block_size - 1):
            p = start + 1 + i
            if p >= len(self.seq):
                break
            true = self.seq[p]
            roll = torch.rand((), generator=g).item()
            if roll < 0.75:
                logits[i, true] = 10.0  # top-1: a linear draft accepts it
            elif roll < 0.9:
                decoy = (true + 1) % self.vocab
                logits[i, decoy] = 10.0
                logits[i, true] = 9.0  # rank 2: only a tree with a branch accepts it
        return logits


class OracleDecoder(Decoder):
    def __init__(self, *args, full_sequence: list[int], seed: int = 0, **kw):
        super().__init__(*args, **kw)
        self._oracle = OracleSession(full_sequence, self.target.config.vocab_size, seed)

    def new_draft_session(self):
        return self._oracle
