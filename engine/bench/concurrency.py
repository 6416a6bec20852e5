"""The bench's concurrency arm (`python -m engine.bench --concurrency 1,2,4,8`): at each
level N, N streams decoded together (engine/batch.py) over the prompts, one stream per
prompt in turn, for every method arm.

Decode and prefill are timed apart, as the console's measurement contract has it: a
stream's prefill runs alone when it joins (engine/batch.py), so counting it in a level's
wall time would mix a per-request cost, the same at every level, into what batching
changes. The aggregate decode rate is all streams' decode tokens over the time spent in
verify rounds; per-stream is that over N. Wall tok/s (prefill and first tokens included)
is reported beside it. Every level runs `--repeat` times, levels interleaved within a
repeat so drift falls on all of them alike; each figure is the median over repeats with
its min-max spread, and the ratio to the first level is taken repeat by repeat (paired).
"""

from __future__ import annotations

import argparse
import statistics
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
    batch, waiting = BatchDecoder(dec), list(range(len(encoded)))
    while len(waiting) < n:  # every level decodes the same prompts: at least N, cycled
        waiting += list(range(len(encoded)))
    prefill_s = decode_s = 0.0
    first_tokens = decode_tokens = 0
    while waiting or len(batch):
        t = time.perf_counter()
        while waiting and len(batch) < n:
            i = waiting.pop(0)
            step = batch.join(
                (i, len(waiting)), encoded[i], max_new_tokens=max_new_tokens, ignore_eos=True
            )
            first_tokens += len(step.tokens)
        t1 = time.perf_counter()
        for step in batch.step().values():
            decode_tokens += len(step.tokens)
        prefill_s, decode_s = prefill_s + t1 - t, decode_s + time.perf_counter() - t1
    agg = decode_tokens / decode_s if decode_s > 0 else 0.0
    wall = prefill_s + decode_s
    return {"concurrency": n, "decode_tokens": decode_tokens, "first_tokens": first_tokens,
            "decode_s": decode_s, "prefill_s": prefill_s, "aggregate_tok_s": agg,
            "per_stream_tok_s": agg / n,
            "wall_tok_s": (decode_tokens + first_tokens) / wall if wall > 0 else 0.0}  # fmt: skip


def _spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize_levels(runs: list[list[dict]]) -> list[dict]:
    """Per level, over repeats (`runs[r][level]`): the median and min-max of aggregate,
    per-stream and wall tok/s, and of the aggregate's ratio to the first level, paired
    within each repeat; the repeats themselves under `runs`."""
    out = []
    for j, first in enumerate(runs[0]):
        rows = [r[j] for r in runs]
        ratios = [r[j]["aggregate_tok_s"] / (r[0]["aggregate_tok_s"] or 1.0) for r in runs]
        out.append({
            "concurrency": first["concurrency"],
            **{k: _spread([row[k] for row in rows])
               for k in ("aggregate_tok_s", "per_stream_tok_s", "wall_tok_s")},
            "x_first_level": _spread(ratios),
            "runs": rows,
        })  # fmt: skip
    return out


def run_concurrency(args: argparse.Namespace) -> dict:
    bundle, prompts = bundle_and_prompts(args)
    encoded = [bundle.tokenizer.encode(p["prompt"]) for p in prompts]
    decoders = arms(args, bundle)
    for dec in decoders.values():
        dec.generate(encoded[0], max_new_tokens=16, ignore_eos=True)  # warm-up
    runs: dict[str, list[list[dict]]] = {name: [] for name in decoders}
    for _ in range(max(1, args.repeat)):
        for name, dec in decoders.items():
            runs[name].append(
                [measure_level(dec, encoded, n, args.max_new_tokens) for n in args.concurrency]
            )
    return {name: summarize_levels(r) for name, r in runs.items()}


def _fig(s: dict, digits: int = 0) -> str:
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def print_concurrency(report: dict) -> None:
    print("decode tok/s (verify rounds only; prefill apart), median [min-max] over repeats")
    print(
        f"{'arm':<10} {'conc':>4} {'aggregate':>22} {'per stream':>22} {'x conc 1':>18}"
        f" {'wall (+prefill)':>16}"
    )
    for name, rows in report.items():
        for r in rows:
            print(
                f"{name:<10} {r['concurrency']:>4} {_fig(r['aggregate_tok_s']):>22} "
                f"{_fig(r['per_stream_tok_s']):>22} {_fig(r['x_first_level'], 2):>18} "
                f"{r['wall_tok_s']['median']:>16.0f}"
            )
