"""The bench's concurrency arm (`python -m engine.bench --concurrency 1,2,4,8`): at each
level N, N streams decoded together (engine/batch.py) over the prompts, one stream per
prompt in turn, for every method arm; aggregate tok/s (all streams' decode tokens over the
level's wall time) and per-stream tok/s (aggregate / N)."""

from __future__ import annotations

import argparse
import time

from engine.batch import BatchDecoder
from engine.bench.measure import arms, bundle_and_prompts


def levels(text: str) -> list[int]:
    out = [int(x) for x in text.split(",") if x.strip()]
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError("concurrency levels are positive integers, e.g. 1,2,4,8")
    return out


def measure_level(dec, encoded: list[list[int]], n: int, max_new_tokens: int) -> dict:
    """N streams at once: each of them takes the next prompt when one ends (continuous)."""
    batch, waiting, tokens = BatchDecoder(dec), list(range(len(encoded))), 0
    for _ in range(n):  # every level decodes the same prompts: at least N, cycled
        if len(waiting) < n:
            waiting += list(range(len(encoded)))
    t = time.perf_counter()
    while waiting or len(batch):
        while waiting and len(batch) < n:
            i = waiting.pop(0)
            batch.join(
                (i, len(waiting)), encoded[i], max_new_tokens=max_new_tokens, ignore_eos=True
            )
        for step in batch.step().values():
            tokens += len(step.tokens)
    seconds = time.perf_counter() - t
    agg = tokens / seconds if seconds > 0 else 0.0
    return {"concurrency": n, "tokens": tokens, "seconds": seconds, "aggregate_tok_s": agg,
            "per_stream_tok_s": agg / n}  # fmt: skip


def run_concurrency(args: argparse.Namespace) -> dict:
    bundle, prompts = bundle_and_prompts(args)
    encoded = [bundle.tokenizer.encode(p["prompt"]) for p in prompts]
    report = {}
    for name, dec in arms(args, bundle).items():
        dec.generate(encoded[0], max_new_tokens=16, ignore_eos=True)  # warm-up
        report[name] = [
            measure_level(dec, encoded, n, args.max_new_tokens) for n in args.concurrency
        ]
    return report


def print_concurrency(report: dict) -> None:
    print(
        f"{'arm':<12} {'conc':>4} {'aggregate tok/s':>16} {'per-stream tok/s':>17} {'x conc 1':>9}"
    )
    for name, rows in report.items():
        base = rows[0]["aggregate_tok_s"] or 1.0
        for r in rows:
            agg, per = r["aggregate_tok_s"], r["per_stream_tok_s"]
            print(f"{name:<12} {r['concurrency']:>4} {agg:>16.1f} {per:>17.1f} {agg / base:>9.2f}")
