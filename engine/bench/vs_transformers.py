"""Our autoregressive decode against transformers' `generate()` on the same weights
(`python -m engine.bench.vs_transformers`).

Both decode greedily with a KV cache and a fixed output length. Decode time excludes the
prompt's forward on both sides: ours from the engine's own per-round timing, transformers'
as generate(N tokens) minus generate(1 token) on the same prompt (what is left is the N-1
cached single-token steps plus its per-step sampling logic). The two run next to each
other per prompt, repeated with the order alternating; the verdict is the median over
prompts of the paired ratio, with its interquartile range.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from engine.bench.prompts import load_prompts
from engine.bench.summary import quartiles
from engine.checkpoint import DEFAULT_TARGET_PATH, load_bundle
from engine.decode import Decoder
from engine.train.corpus import BENCH_PROMPTS_PATH


def _hf_seconds(model, ids: torch.Tensor, new_tokens: int) -> tuple[float, list[int]]:
    t0 = time.perf_counter()
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        pad_token_id=model.config.eos_token_id,
    )
    return time.perf_counter() - t0, out[0, ids.shape[1] :].tolist()


def hf_decode_tok_s(model, prompt_ids: list[int], new_tokens: int) -> tuple[float, list[int]]:
    ids = torch.tensor([prompt_ids])
    full, tokens = _hf_seconds(model, ids, new_tokens)
    first, _ = _hf_seconds(model, ids, 1)
    return (new_tokens - 1) / max(full - first, 1e-9), tokens


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m engine.bench.vs_transformers",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--model-path", default=str(DEFAULT_TARGET_PATH), help="target directory")
    p.add_argument("--prompts", default=str(BENCH_PROMPTS_PATH), help="JSONL prompt set")
    p.add_argument("--types", type=lambda s: s.split(","), default=["code"], help="text types")
    p.add_argument("--limit", type=int, default=None, help="prompts per text type")
    p.add_argument("--max-new-tokens", type=int, default=128, help="tokens per request")
    p.add_argument("--repeat", type=int, default=3, help="paired runs per prompt")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)
    try:
        import transformers
    except ImportError:
        raise SystemExit("transformers is not installed (pip install transformers)") from None
    if args.threads:
        torch.set_num_threads(args.threads)
    bundle = load_bundle(args.model_path, load_drafter=False)
    ours = Decoder(bundle.target, method="ar")
    hf = transformers.AutoModelForCausalLM.from_pretrained(args.model_path, dtype=torch.float32)
    hf.eval()
    prompts = load_prompts(Path(args.prompts), args.types, args.limit)
    n = args.max_new_tokens
    rows = []
    for r in prompts:
        ids = bundle.tokenizer.encode(r["prompt"])
        ratios, ours_tok_s, hf_tok_s = [], [], []
        for rep in range(args.repeat):
            order = ("ours", "hf") if rep % 2 == 0 else ("hf", "ours")
            got = {}
            for who in order:
                if who == "ours":
                    g = ours.generate(ids, max_new_tokens=n, ignore_eos=True)
                    got["ours"] = (g.decode_tok_per_s, g.tokens)
                else:
                    with torch.inference_mode():
                        got["hf"] = hf_decode_tok_s(hf, ids, n)
            if got["ours"][1] != got["hf"][1]:
                raise SystemExit(f"{r['id']}: our greedy tokens differ from transformers'")
            ours_tok_s.append(got["ours"][0])
            hf_tok_s.append(got["hf"][0])
            ratios.append(got["ours"][0] / got["hf"][0])
        rows.append(
            {
                "id": r["id"],
                "ours_tok_s": statistics.median(ours_tok_s),
                "transformers_tok_s": statistics.median(hf_tok_s),
                "ratio": statistics.median(ratios),
            }
        )
    q1, med, q3 = quartiles([row["ratio"] for row in rows])
    report = {
        "prompts": rows,
        "ours_over_transformers": med,
        "iqr": [q1, q3],
        "ours_tok_s": statistics.median(row["ours_tok_s"] for row in rows),
        "transformers_tok_s": statistics.median(row["transformers_tok_s"] for row in rows),
        "transformers_version": transformers.__version__,
        "identical_tokens": True,
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print(
            f"AR decode, {len(rows)} prompts x {args.repeat}, {n} tokens: ours "
            f"{report['ours_tok_s']:.0f} tok/s, transformers {report['transformers_tok_s']:.0f}"
            f" tok/s (median over prompts); paired ratio {med:.2f}x (IQR {q1:.2f}-{q3:.2f}),"
            " identical tokens"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
