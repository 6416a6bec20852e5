"""Tiny random target + drafter pairs in the same on-disk layout as real checkpoints.

Tests use these so they never need the bundled weights or a download; the training
pipeline uses `init_pair` to start from the same architecture definitions.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from engine.drafter import DFlashConfig, DFlashDrafter
from engine.model import Qwen3Config, Qwen3ForCausalLM
from engine.tokenizer import byte_tokenizer


def tiny_configs(*, hidden=64, layers=2, heads=4, kv_heads=2, inter=128, max_pos=512,
                 draft_layers=1, block_size=8, target_layer_ids=None, tie=False,
                 rope_theta=10000.0) -> tuple[Qwen3Config, DFlashConfig]:
    tok = byte_tokenizer()
    tcfg = Qwen3Config(
        vocab_size=tok.vocab_size, hidden_size=hidden, intermediate_size=inter,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        head_dim=hidden // heads, rope_theta=rope_theta, tie_word_embeddings=tie,
        max_position_embeddings=max_pos, eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
    )
    dl = Qwen3Config(**{**tcfg.to_dict_base(), "num_hidden_layers": draft_layers})
    ids = target_layer_ids if target_layer_ids is not None else sorted({0, layers - 1})
    dcfg = DFlashConfig(dl, block_size, list(ids), tok.mask_token_id)
    return tcfg, dcfg


def init_pair(tcfg: Qwen3Config, dcfg: DFlashConfig, *, seed: int = 0,
              std: float = 0.02) -> tuple[Qwen3ForCausalLM, DFlashDrafter]:
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


def save_target(model: Qwen3ForCausalLM, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(model.config.to_dict(), indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": model.config.eos_token_id, "do_sample": False}, indent=2) + "\n")
    byte_tokenizer().save(out)


def save_drafter(drafter: DFlashDrafter, out: Path, num_target_layers: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in drafter.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg = drafter.config.to_dict()
    cfg["num_target_layers"] = num_target_layers
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    byte_tokenizer().save(out)


def make_random_pair(out_dir: str | Path, *, seed: int = 0, **config) -> tuple[Path, Path]:
    """Write a tiny random target and drafter under out_dir; return their directories."""
    out_dir = Path(out_dir)
    tcfg, dcfg = tiny_configs(**config)
    target, drafter = init_pair(tcfg, dcfg, seed=seed)
    save_target(target, out_dir / "target")
    save_drafter(drafter, out_dir / "drafter", tcfg.num_hidden_layers)
    return out_dir / "target", out_dir / "drafter"
