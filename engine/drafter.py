"""DFlash block drafter conditioned on target hidden states.

One forward drafts a whole block `[bonus, MASK, ...]`: the block attends bidirectionally to
itself and to "context" rows, which are the target's hidden states at `target_layer_ids`
fused by `fc` + `hidden_norm` and injected as extra K/V rows into every draft layer. The
drafter has no embedding or LM head of its own: it borrows the target's by reference.
Its KV cache only ever holds context rows for committed positions (it is cropped back to
`start` after every call), so rejected tokens never leak into later drafts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from engine.kvcache import KVCache
from engine.model import (
    DecoderLayer,
    Qwen3Config,
    Qwen3ForCausalLM,
    RMSNorm,
    RotaryEmbedding,
    project,
)


def default_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """DFlash's spacing: evenly from layer 1 to layer L-3 (one draft layer: the middle)."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    span = num_target_layers - 4
    return [round(1 + i * span / (num_draft_layers - 1)) for i in range(num_draft_layers)]


@dataclass
class DFlashConfig:
    layers: Qwen3Config  # the draft layers' dimensions (the target's, by DFlash convention)
    block_size: int
    target_layer_ids: list[int]
    mask_token_id: int

    @classmethod
    def from_dict(cls, d: dict) -> DFlashConfig:
        dcfg = d.get("dflash_config") or {}
        layers = Qwen3Config.from_dict(d)
        block = d.get("block_size") or dcfg.get("block_size") or 16
        ids = dcfg.get("target_layer_ids") or d.get("target_layer_ids")
        if ids is None:
            n_target = d.get("num_target_layers") or layers.num_hidden_layers
            ids = default_target_layer_ids(n_target, layers.num_hidden_layers)
        mask = dcfg.get("mask_token_id", d.get("mask_token_id"))
        if mask is None:
            raise ValueError("drafter config has no dflash_config.mask_token_id")
        return cls(layers, int(block), [int(i) for i in ids], int(mask))

    @classmethod
    def from_file(cls, path: str | Path) -> DFlashConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict:
        d = self.layers.to_dict()
        d["architectures"] = ["DFlashDraftModel"]
        d["block_size"] = self.block_size
        d["num_target_layers"] = d.pop("num_target_layers", None)
        d["dflash_config"] = {
            "block_size": self.block_size,
            "target_layer_ids": self.target_layer_ids,
            "mask_token_id": self.mask_token_id,
        }
        return {k: v for k, v in d.items() if v is not None}


class DraftLayer(DecoderLayer):
    """Qwen3 decoder layer (same weights and names) whose K/V come from [context ; block]
    and whose queries come from the block alone."""

    def forward(self, h, ctx, cos, sin, n_ctx, cache, layer, window, mask=None):
        attn = self.self_attn
        x = self.input_layernorm(h)
        # The same k/v projections serve context and block rows (KV injection).
        if attn.qkv is not None:  # inference: one matmul over [ctx ; block], q for the block
            q, k, v = attn.fused_qkv(torch.cat([ctx, x], dim=1), cos, sin, q_from=n_ctx)
        else:
            q = attn.project_q(x, cos[:, :, n_ctx:], sin[:, :, n_ctx:])
            k, v = attn.project_kv(torch.cat([ctx, x], dim=1), cos, sin)
        if cache is not None:
            k, v = cache.append(layer, k, v)
            if window is not None:
                # Draft window: only the last `window` context rows stay visible.
                n_block = h.shape[1]
                first = max(0, k.shape[2] - n_block - window)
                k, v = k[:, :, first:], v[:, :, first:]
        h = h + attn.attend(q, k, v, mask, is_causal=False)
        return h + self.mlp(self.post_attention_layernorm(h))


class DFlashDrafter(nn.Module):
    def __init__(self, cfg: DFlashConfig, target: Qwen3ForCausalLM):
        super().__init__()
        self.config = cfg
        lc = cfg.layers
        self.fc = nn.Linear(len(cfg.target_layer_ids) * lc.hidden_size, lc.hidden_size, bias=False)
        self.hidden_norm = RMSNorm(lc.hidden_size, lc.rms_norm_eps)
        self.layers = nn.ModuleList(DraftLayer(lc) for _ in range(lc.num_hidden_layers))
        self.norm = RMSNorm(lc.hidden_size, lc.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(lc.head_dim, lc.rope_theta)
        # Shared by reference and never trained: a plain attribute keeps the target's
        # weights out of this module's state_dict and parameters().
        object.__setattr__(self, "target", target)

    @property
    def block_size(self) -> int:
        return self.config.block_size

    @property
    def target_layer_ids(self) -> list[int]:
        return self.config.target_layer_ids

    def new_cache(self, capacity: int) -> KVCache:
        lc = self.config.layers
        w = self.fc.weight
        return KVCache(
            lc.num_hidden_layers,
            lc.num_key_value_heads,
            lc.head_dim,
            capacity,
            device=w.device,
            dtype=w.dtype,
        )

    def fuse(self, target_hidden: list[torch.Tensor]) -> torch.Tensor:
        """Target layer outputs (each [1, T, H], or one [1, T, layers*H] of them side by
        side) -> context features [1, T, H]."""
        x = target_hidden[0] if len(target_hidden) == 1 else torch.cat(target_hidden, dim=-1)
        return self.hidden_norm(project(self.fc, x))

    def forward(
        self,
        ctx: torch.Tensor,
        block_ids: torch.Tensor,
        position_ids: torch.Tensor | int,
        cache: KVCache | None,
        window: int | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Hidden states of the block rows [1, B, H].

        ctx: fused context rows [1, C, H] not yet in `cache`; position_ids cover those C rows
        then the B block rows (an int: the first of C + B consecutive positions). The caller
        crops `cache` back to the committed length after.
        """
        h = self.target.embed(block_ids)
        fused = self.layers[0].self_attn.qkv is not None  # then it takes the signed table
        n_ctx = ctx.shape[1]
        if isinstance(position_ids, int):  # consecutive rows from this position
            rows = n_ctx + h.shape[1]
            cos, sin = self.rotary_emb.span(position_ids, rows, h.device, h.dtype, signed=fused)
        else:
            cos, sin = self.rotary_emb(position_ids, h.dtype, signed=fused)
        for i, layer in enumerate(self.layers):
            h = layer(h, ctx, cos, sin, n_ctx, cache, i, window, mask)
        if cache is not None:
            cache.commit_append()
        return self.norm(h)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return project(self.target.lm_head, hidden)


class DraftSession:
    """Per-request drafting state: the draft cache and the context rows not yet in it.

    `propose` returns the per-position logits [B-1, V] for the positions after the bonus.
    This is the interface the decode loop uses, so tests can substitute their own.
    """

    def __init__(self, drafter: DFlashDrafter, capacity: int, window: int | None = None):
        self.drafter = drafter
        self.cache = drafter.new_cache(capacity)
        self.window = window
        self.pending: torch.Tensor | None = None  # fused ctx rows for positions cache.length..
        self._block: torch.Tensor | None = None  # [bonus, MASK...], reused every round
        self._block_np = None  # its numpy view on CPU

    def add_context(self, target_hidden: list[torch.Tensor]) -> None:
        fused = self.drafter.fuse(target_hidden)
        self.pending = fused if self.pending is None else torch.cat([self.pending, fused], dim=1)

    def propose(self, bonus: int, start: int, block_size: int) -> torch.Tensor:
        d = self.drafter
        dev = d.fc.weight.device
        ctx = self.pending
        if ctx is None:
            ctx = torch.zeros(
                1, 0, d.config.layers.hidden_size, device=dev, dtype=d.fc.weight.dtype
            )
        assert self.cache.length + ctx.shape[1] == start, "draft context out of step"
        block = self._block
        if block is None or block.shape[1] != block_size:
            block = torch.full(
                (1, block_size), d.config.mask_token_id, dtype=torch.long, device=dev
            )
            self._block = block
            # On CPU the bonus is written through a numpy view of the block: no torch op.
            self._block_np = block.numpy() if block.device.type == "cpu" else None
        if self._block_np is not None:
            self._block_np[0, 0] = bonus  # the other rows stay MASK: never written
        else:
            block[0, 0] = bonus
        hidden = d(ctx, block, self.cache.length, self.cache, self.window)
        self.cache.crop(start)  # keep committed context rows only, drop the block
        self.pending = None
        return d.logits(hidden[0, 1:])
