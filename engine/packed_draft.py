"""`DraftSession.propose` for several sessions in one drafter forward.

The packing is engine/packed.py's: each session's rows, [its pending context ; its block
(bonus, MASK...)], are laid end to end, the matmuls run once over all of them, and each
block attends only to its own session's cache and context (bidirectionally, with the
session's draft window), as it would alone. Sessions the packing cannot serve (a test's
own proposer, an unfused drafter) propose one by one, with the same result.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.drafter import DraftSession
from engine.model import project


def _packable(sessions: Sequence) -> bool:
    return all(isinstance(s, DraftSession) for s in sessions) and (
        sessions[0].drafter.layers[0].self_attn.qkv is not None
    )


def propose_many(
    sessions: Sequence, bonuses: Sequence[int], starts: Sequence[int], block_size: int
) -> list[torch.Tensor]:
    """Per session, the draft logits [block_size - 1, V] after its bonus at its start."""
    if len(sessions) == 1 or not _packable(sessions):
        return [
            s.propose(b, start, block_size)
            for s, b, start in zip(sessions, bonuses, starts, strict=True)
        ]
    d = sessions[0].drafter
    dev, dtype = d.fc.weight.device, d.fc.weight.dtype
    width = d.config.layers.hidden_size
    ctxs, positions = [], []
    for s, start in zip(sessions, starts, strict=True):
        ctx = s.pending if s.pending is not None else torch.zeros(1, 0, width, dtype=dtype)
        assert s.cache.length + ctx.shape[1] == start, "draft context out of step"
        ctxs.append(ctx.to(dev))
        positions.append(torch.arange(s.cache.length, start + block_size))
    block = torch.full((len(sessions), block_size), d.config.mask_token_id, dtype=torch.long)
    block[:, 0] = torch.tensor(list(bonuses))
    h = d.target.embed(block.view(1, -1).to(dev))
    fused = torch.cat(positions)[None].to(dev)
    cos, sin = d.rotary_emb(fused, h.dtype, signed=True)
    for i, layer in enumerate(d.layers):
        h = _packed_layer(layer, h, ctxs, cos, sin, sessions, i, block_size)
    for s, start in zip(sessions, starts, strict=True):
        s.cache.commit_append()
        s.cache.crop(start)  # keep committed context rows only, drop the block
        s.pending = None
    h = d.norm(h).view(len(sessions), block_size, -1)
    logits = project(d.target.lm_head, h[:, 1:])
    return list(logits)


def _packed_layer(layer, h, ctxs, cos, sin, sessions, index: int, block_size: int):
    """`DraftLayer.forward` for every session's block at once: h [1, n*B, H] the blocks."""
    attn = layer.self_attn
    x = layer.input_layernorm(h)
    pieces, spans, at = [], [], 0
    for j, ctx in enumerate(ctxs):
        pieces += [ctx, x[:, j * block_size : (j + 1) * block_size]]
        spans.append((at, at + ctx.shape[1], at + ctx.shape[1] + block_size))
        at += ctx.shape[1] + block_size
    q, k, v = attn.fused_qkv(torch.cat(pieces, dim=1), cos, sin)
    outs = []
    for s, (a, blk, b) in zip(sessions, spans, strict=True):
        ks, vs = s.cache.append(index, k[:, :, a:b], v[:, :, a:b])
        if s.window is not None:  # only the last `window` context rows stay visible
            first = max(0, ks.shape[2] - block_size - s.window)
            ks, vs = ks[:, :, first:], vs[:, :, first:]
        outs.append(attn.attend_heads(q[:, :, blk:b], ks, vs, None, is_causal=False))
    h = h + project(attn.o_proj, torch.cat(outs, dim=1))
    return h + layer.mlp(layer.post_attention_layernorm(h))
