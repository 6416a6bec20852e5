"""Target LM training: next-byte cross-entropy on windows of the corpus
(`specengine train target`)."""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from engine.checkpoint import load_state, save_target
from engine.model import Qwen3ForCausalLM
from engine.tiny import init_pair
from engine.tokenizer import byte_tokenizer
from engine.train.bundled import bundled_configs
from engine.train.corpus import encode_files, split_files, stdlib_root
from engine.train.loop import optimise


def sample_windows(
    data: np.ndarray, batch: int, length: int, gen: np.random.Generator
) -> torch.Tensor:
    starts = gen.integers(0, len(data) - length - 1, size=batch)
    return torch.from_numpy(np.stack([data[s : s + length + 1] for s in starts]).astype(np.int64))


def lm_loss(model: Qwen3ForCausalLM, x: torch.Tensor) -> torch.Tensor:
    b, t = x.shape[0], x.shape[1] - 1
    pos = torch.arange(t)[None].expand(b, t)
    logits, _ = model(x[:, :-1], pos)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), x[:, 1:].reshape(-1))


def loss_by_position(
    model: Qwen3ForCausalLM, data: np.ndarray, seq_len: int, gen: np.random.Generator
) -> dict[tuple[int, int], float]:
    """Mean held-out loss in position ranges: a model that uses its context has lower loss
    late in a window than early; one that does not, flat or rising."""
    x = sample_windows(data, 16, seq_len, gen)
    b, t = x.shape[0], x.shape[1] - 1
    logits, _ = model(x[:, :-1], torch.arange(t)[None].expand(b, t))
    ce = F.cross_entropy(logits.transpose(1, 2).float(), x[:, 1:], reduction="none").mean(0)
    edges = [e for e in (0, 64, 512, 1000, 1500, 1900, 2048) if e < t] + [t]
    return {(a, b): float(ce[a:b].mean()) for a, b in itertools.pairwise(edges)}


def train_target(args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    tok = byte_tokenizer()
    root = Path(args.corpus) if args.corpus else stdlib_root()
    train_files, held = split_files(root)
    data = encode_files(train_files, tok.eos_token_id)
    val = encode_files(held, tok.eos_token_id)
    print(
        f"corpus {root}: {len(train_files)} train files ({len(data) / 1e6:.1f}M tokens), "
        f"{len(held)} held-out files ({len(val) / 1e6:.2f}M tokens)",
        flush=True,
    )
    tcfg, dcfg = bundled_configs()
    model, _ = init_pair(tcfg, dcfg, seed=args.seed)
    if args.init_from:
        # Continue from a trained target (e.g. at a longer --seq-len): its weights, a fresh
        # optimiser and schedule. Tied embeddings appear once in the file.
        model.load_state_dict(load_state(Path(args.init_from)), strict=False)
        print(f"initialised from {args.init_from}", flush=True)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)

    def loss_at(step: int) -> tuple[torch.Tensor, int]:
        x = sample_windows(data, args.batch, args.seq_len, np.random.default_rng([args.seed, step]))
        return lm_loss(model, x), x.numel()

    optimise("target", model, opt, work / "target.pt", args, loss_at)
    model.eval()
    with torch.no_grad():
        gen = np.random.default_rng([args.seed, 10**9])
        vl = float(
            np.mean(
                [lm_loss(model, sample_windows(val, 8, args.seq_len, gen)).item() for _ in range(8)]
            )
        )
    print(f"held-out loss {vl:.3f} nats/byte", flush=True)
    with torch.no_grad():
        by_pos = loss_by_position(model, val, args.seq_len, np.random.default_rng([args.seed, 9]))
    print(
        "held-out loss by position: "
        + ", ".join(f"{a}-{b}: {v:.3f}" for (a, b), v in by_pos.items()),
        flush=True,
    )
    save_target(model, Path(args.out))
    print(f"saved target to {args.out}", flush=True)
