"""The optimise loop both training stages share.

Both stages are seeded and resumable: a checkpoint (weights, optimiser, step) is written to
--work-dir every --ckpt-every steps and picked up again on restart; the batch for step s
is drawn from a generator seeded by (seed, s), so a resumed run sees the same data.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tqdm import tqdm


def cosine_lr(
    step: int, total: int, peak: float, warmup_ratio: float = 0.04, floor: float = 0.1
) -> float:
    warm = max(1, int(total * warmup_ratio))
    if step < warm:
        return peak * (step + 1) / warm
    t = (step - warm) / max(1, total - warm)
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def save_checkpoint(path: Path, **state) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a kill mid-save never leaves a torn checkpoint


def optimise(
    name: str,
    module: torch.nn.Module,
    opt: torch.optim.Optimizer,
    ckpt: Path,
    args: argparse.Namespace,
    loss_at: Callable[[int], tuple[torch.Tensor, int]],
) -> None:
    """The loop both stages share: resume from `ckpt` if present, then AdamW steps with the
    cosine schedule and clipping up to args.steps, a progress bar with loss and tokens/s,
    and an atomic checkpoint every args.ckpt_every steps. `loss_at(step)` must draw its
    batch from a generator seeded by the step, so a resumed run sees the same data."""
    step = 0
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        print(f"resumed from {ckpt} at step {step}", flush=True)
    bar = tqdm(total=args.steps, initial=step, desc=name, mininterval=2.0, file=sys.stdout)
    t0, seen = time.perf_counter(), 0
    while step < args.steps:
        for group in opt.param_groups:
            group["lr"] = cosine_lr(step, args.steps, args.lr)
        loss, tokens = loss_at(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()
        step += 1
        seen += tokens
        bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{seen / (time.perf_counter() - t0):.0f}")
        bar.update(1)
        if step % args.ckpt_every == 0 or step == args.steps:
            save_checkpoint(ckpt, model=module.state_dict(), opt=opt.state_dict(), step=step)
    bar.close()
