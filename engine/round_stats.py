"""What one verify round reports (its own module so the greedy and the sampled rounds,
engine/decode.py and engine/decode_sampled.py, share it without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RoundStats:
    commit_len: int  # tokens committed this round, incl. the bonus token (tau)
    context_len: int  # tokens in the target KV cache when the round started
    draft_ms: float
    tree_ms: float
    verify_ms: float
    commit_ms: float
    tree_nodes: int  # tokens verified incl. the root (1 for AR)

    @property
    def step_ms(self) -> float:
        return self.draft_ms + self.tree_ms + self.verify_ms + self.commit_ms
