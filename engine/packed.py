"""One target forward over several sequences, packed ragged along the row axis.

Continuous batching (engine/batch.py) verifies every running sequence's AR token, draft
block or draft tree in one forward. The sequences have KV caches of different lengths, so
rather than padding them into one [B, H, T, D] cache, each keeps its own KVCache and their
new rows are laid end to end in one [1, N, H] input. Everything that treats rows
independently (embedding, norms, the q/k/v, o_proj, MLP and LM-head matmuls, RoPE by
explicit position ids) runs once over all N rows: on CPU for small models that is where a
round's time goes, per op rather than per row. Only attention differs per sequence: it is
run segment by segment, each against its own cache and with its own mask (causal for a
block, ancestry for a tree), which is exactly the attention the sequence would get alone.

So every row's arithmetic is the one it gets in a forward of its own, except that the
matmuls see more rows: the kernel may block the sums differently, which can move a logit
in its last bits but not which token is the argmax, save for exact near-ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from engine.kvcache import KVCache
from engine.model import Qwen3ForCausalLM, causal_mask, project


@dataclass
class Segment:
    """One sequence's rows in a packed forward."""

    ids: torch.Tensor  # [1, T] token ids
    positions: torch.Tensor  # [1, T] position ids
    cache: KVCache
    mask: torch.Tensor | None = None  # additive over [past + T]; None: causal

    @property
    def rows(self) -> int:
        return self.ids.shape[1]


def _segment_mask(seg: Segment, dtype: torch.dtype) -> tuple[torch.Tensor | None, bool]:
    """The mask and is_causal flag `Attention.forward` would pick for this segment alone,
    built once per forward instead of once per layer."""
    t, past = seg.rows, seg.cache.length
    if seg.mask is not None or t == 1:
        return seg.mask, False
    if past == 0:
        return None, True
    return causal_mask(t, past, dtype, seg.ids.device), False


def packed_forward(
    target: Qwen3ForCausalLM, segments: Sequence[Segment], output_layers: Sequence[int] = ()
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits [1, N, V] of all segments' rows in order, and the tapped layers' outputs
    [1, N, H] (as `Qwen3ForCausalLM.forward` taps them); each cache gains its rows."""
    ids = torch.cat([s.ids for s in segments], dim=1)
    positions = torch.cat([s.positions for s in segments], dim=1)
    x = target.model.embed_tokens(ids)
    fused = target.model.layers[0].self_attn.qkv is not None
    cos, sin = target.model.rotary_emb(positions, x.dtype, signed=fused)
    masks = [_segment_mask(s, x.dtype) for s in segments]
    bounds, at = [], 0
    for s in segments:
        bounds.append((at, at + s.rows))
        at += s.rows
    wanted = set(output_layers)
    last = len(target.model.layers) - 1
    hidden: dict[int, torch.Tensor] = {}
    for i, layer in enumerate(target.model.layers):
        attn = layer.self_attn
        h = layer.input_layernorm(x)
        if fused:
            q, k, v = attn.fused_qkv(h, cos, sin)
        else:
            q, (k, v) = attn.project_q(h, cos, sin), attn.project_kv(h, cos, sin)
        outs = []
        for s, (a, b), (mask, is_causal) in zip(segments, bounds, masks, strict=True):
            ks, vs = s.cache.append(i, k[:, :, a:b], v[:, :, a:b])
            outs.append(attn.attend_heads(q[:, :, a:b], ks, vs, mask, is_causal))
        x = x + project(attn.o_proj, torch.cat(outs, dim=1) if len(outs) > 1 else outs[0])
        x = x + layer.mlp(layer.post_attention_layernorm(x))
        if i in wanted and i != last:
            hidden[i] = x
    for s in segments:
        s.cache.commit_append()
    x = target.model.norm(x)
    if last in wanted:
        hidden[last] = x
    return project(target.lm_head, x), [hidden[i] for i in output_layers]
