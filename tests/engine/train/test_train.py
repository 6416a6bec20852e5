"""The training pipeline: DFlash block mask, resumable seeded runs, loadable lossless output."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from engine.checkpoint import load_bundle
from engine.decode import Decoder
from engine.train.corpus import is_held_out, split_files
from engine.train.drafter import dflash_block_mask


def test_block_mask_context_strictly_before_anchor_and_blocks_isolated():
    anchors = torch.tensor([[3, 7]])
    seq_len, block = 10, 4
    m = dflash_block_mask(anchors, seq_len, block, torch.float32)[0, 0] == 0  # True = visible
    assert m.shape == (2 * block, seq_len + 2 * block)
    for q in range(2 * block):
        b = q // block
        anchor = int(anchors[0, b])
        assert m[q, :seq_len].tolist() == [k < anchor for k in range(seq_len)]
        own = [seq_len + b * block + i for i in range(block)]
        assert all(m[q, k] for k in own), "a block sees all of itself (bidirectional)"
        other = [seq_len + k for k in range(2 * block) if k // block != b]
        assert not any(m[q, k] for k in other), "blocks never see each other"


def test_corpus_split_is_by_file_and_stable(tmp_path):
    for i in range(60):
        (tmp_path / f"mod{i}.py").write_text(f"x = {i}\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("skip me\n")
    train, held = split_files(tmp_path)
    assert not {p.name for p in train} & {p.name for p in held}
    assert len(train) + len(held) == 60 and held, "tests/ excluded, some files held out"
    assert all(is_held_out(p, tmp_path) for p in held)
    assert split_files(tmp_path) == (train, held)


def run_train(*args):
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "train", *args, "--threads", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )


@pytest.mark.slow  # trains both models for a few steps
def test_train_target_resumes_then_drafter_trains_and_loads(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(40):
        (corpus / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n" * 30)
    work, target, drafter = tmp_path / "work", tmp_path / "target", tmp_path / "drafter"
    common = ["--corpus", str(corpus), "--work-dir", str(work), "--ckpt-every", "1"]
    first = run_train(
        "target", "--steps", "1", "--batch", "2", "--seq-len", "32", "--out", str(target), *common
    )
    assert "loss=" in first.stdout and "tok_s=" in first.stdout, "progress shows loss and tokens/s"
    resumed = run_train(
        "target", "--steps", "2", "--batch", "2", "--seq-len", "32", "--out", str(target), *common
    )
    assert "resumed from" in resumed.stdout and "at step 1" in resumed.stdout
    continued = run_train(
        "target", "--steps", "1", "--batch", "2", "--seq-len", "48", "--init-from", str(target),
        "--out", str(tmp_path / "longer"), "--corpus", str(corpus), "--work-dir",
        str(tmp_path / "work2"),
    )  # fmt: skip
    assert f"initialised from {target}" in continued.stdout
    assert "held-out loss by position: 0-48:" in continued.stdout
    drafted = run_train(
        "drafter",
        "--target",
        str(target),
        "--out",
        str(drafter),
        "--steps",
        "2",
        "--batch",
        "2",
        "--samples",
        "4",
        "--prompt-lens",
        "24,48",
        "--response-len",
        "40",
        "--anchors",
        "2",
        *common,
    )
    # One bucket per prompt length, each prompt followed by the target's 40-token response.
    assert "drafter data: 2 x 64, 2 x 88 tokens" in drafted.stdout
    b = load_bundle(target, drafter)
    assert b.block_size == 16
    ids = b.tokenizer.encode("def f(x):\n")
    ref = Decoder(b.target, method="ar").generate(ids, max_new_tokens=20).tokens
    assert (
        Decoder(b.target, b.drafter, method="ddtree", budget=16)
        .generate(ids, max_new_tokens=20)
        .tokens
        == ref
    )
