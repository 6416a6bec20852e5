"""Tiny random target + drafter pairs, written in the same on-disk layout as real checkpoints.

Tests use these so they never need the bundled weights or a download; the training
pipeline uses `init_pair` to start from the same architecture definitions.
"""

from __future__ import annotations

from pathlib import Path

import torch

from engine.checkpoint import save_drafter, save_target
from engine.drafter import DFlashConfig, DFlashDrafter
from engine.model import Qwen3Config, Qwen3ForCausalLM
from engine.tokenizer import byte_tokenizer


def tiny_configs(
    *,
    hidden=64,
    layers=2,
    heads=4,
    kv_heads=2,
    inter=128,
    max_pos=512,
    draft_layers=1,
    block_size=8,
    target_layer_ids=None,
    tie=False,
    rope_theta=10000.0,
) -> tuple[Qwen3Config, DFlashConfig]:
    tok = byte_tokenizer()
    tcfg = Qwen3Config(
        vocab_size=tok.vocab_size,
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        rope_theta=rope_theta,
        tie_word_embeddings=tie,
        max_position_embeddings=max_pos,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
    )
    dl = Qwen3Config(**{**tcfg.to_dict_base(), "num_hidden_layers": draft_layers})
    ids = target_layer_ids if target_layer_ids is not None else sorted({0, layers - 1})
    dcfg = DFlashConfig(dl, block_size, list(ids), tok.mask_token_id)
    return tcfg, dcfg


def init_pair(
    tcfg: Qwen3Config, dcfg: DFlashConfig, *, seed: int = 0, std: float = 0.02
) -> tuple[Qwen3ForCausalLM, DFlashDrafter]:
    g = torch.Generator().manual_seed(seed)
    target = Qwen3ForCausalLM(tcfg)
    drafter = DFlashDrafter(dcfg, target)
    for module in (target, drafter):
        for name, p in module.named_parameters():
            with torch.no_grad():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * std)
    return target.eval(), drafter.eval()


def make_random_pair(out_dir: str | Path, *, seed: int = 0, **config) -> tuple[Path, Path]:
    """Write a tiny random target and drafter under out_dir; return their directories."""
    out_dir = Path(out_dir)
    tcfg, dcfg = tiny_configs(**config)
    target, drafter = init_pair(tcfg, dcfg, seed=seed)
    save_target(target, out_dir / "target")
    save_drafter(drafter, out_dir / "drafter", tcfg.num_hidden_layers)
    return out_dir / "target", out_dir / "drafter"
