"""Train the bundled target and DFlash drafter from local text (`specengine train ...`).

  specengine train target  --out engine/weights/target
  specengine train drafter --target engine/weights/target --out engine/weights/drafter

Both stages are seeded and resumable (engine/train/loop.py); the stages themselves live in
engine/train/target.py and engine/train/drafter.py.
"""

from __future__ import annotations

import argparse
import os

import torch

from engine.train.drafter import train_drafter
from engine.train.target import train_target


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="specengine train",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sub = p.add_subparsers(dest="stage", required=True)
    t = sub.add_parser(
        "target",
        help="train the target LM on the corpus",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    t.add_argument("--out", default="engine/weights/target", help="output model directory")
    t.add_argument("--steps", type=int, default=1000, help="optimiser steps")
    t.add_argument("--batch", type=int, default=16, help="sequences per step")
    t.add_argument("--seq-len", type=int, default=512, help="tokens per sequence")
    t.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (cosine, 4%% warmup)")
    t.add_argument(
        "--init-from",
        default=None,
        help="start from this trained target directory instead of random weights",
    )
    t.set_defaults(func=train_target)
    d = sub.add_parser(
        "drafter",
        help="train the DFlash drafter against a frozen target",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    d.add_argument("--target", default="engine/weights/target", help="trained target directory")
    d.add_argument("--out", default="engine/weights/drafter", help="output drafter directory")
    d.add_argument("--steps", type=int, default=1500, help="optimiser steps")
    d.add_argument("--batch", type=int, default=8, help="sequences per step")
    d.add_argument(
        "--samples", type=int, default=2048, help="target-regenerated training sequences"
    )
    d.add_argument(
        "--prompt-lens",
        default="auto",
        help="corpus prompt lengths, one bucket of sequences each (comma-separated); "
        "auto: six from 128 tokens to the target's context minus the response",
    )
    d.add_argument(
        "--response-len", type=int, default=256, help="target response tokens per sequence"
    )
    d.add_argument(
        "--draft-layers",
        type=int,
        default=None,
        help="draft decoder layers (default: the bundled drafter's)",
    )
    d.add_argument("--anchors", type=int, default=24, help="anchors (blocks) per sequence")
    d.add_argument("--lr", type=float, default=6e-4, help="peak learning rate (cosine, 4%% warmup)")
    d.set_defaults(func=train_drafter)
    for sp in (t, d):
        sp.add_argument(
            "--corpus", default=None, help="directory of .py files (default: this Python's stdlib)"
        )
        sp.add_argument(
            "--work-dir", default=".train", help="checkpoints and cached data (resumable)"
        )
        sp.add_argument("--ckpt-every", type=int, default=50, help="steps between checkpoints")
        sp.add_argument("--seed", type=int, default=0, help="random seed")
        sp.add_argument(
            "--threads",
            type=int,
            default=None,
            help="torch CPU threads (default: all cores; 1 is steadier on a shared machine)",
        )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads or max(1, os.cpu_count() or 1))
    args.func(args)
    return 0
