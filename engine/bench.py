"""AR vs DFlash vs DDTree on the same prompts, in one process (`python -m engine.bench`).

Decode throughput excludes prefill (the first token comes from the prompt forward), every
request ignores EOS so output lengths are fixed, methods are interleaved per prompt so
machine drift hits them alike, and every output is checked against AR (lossless).
Throughput is a ratio of sums (tokens / time over all prompts of a type); the commit
length is the mean over responses of each response's mean, as the DDTree paper reports it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from engine.corpus import BENCH_PROMPTS_PATH
from engine.decode import METHODS, Decoder, Generation
from engine.loading import load_bundle


def load_prompts(path: Path, types: list[str] | None, limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if types:
        rows = [r for r in rows if r.get("type", "text") in types]
    if limit:
        by_type: dict[str, list[dict]] = {}
        for r in rows:
            by_type.setdefault(r.get("type", "text"), []).append(r)
        rows = [r for group in by_type.values() for r in group[:limit]]
    return rows


def repeated_ngram_fraction(tokens: list[int], n: int = 8) -> float:
    """Share of the output's n-grams that already occurred earlier in it. Looping text is
    easy to draft, so a high value means the commit length is inflated by repetition, not
    earned by the drafter (a trap the field reports ran into)."""
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    seen: set[tuple[int, ...]] = set()
    repeats = 0
    for g in grams:
        repeats += g in seen
        seen.add(g)
    return repeats / len(grams) if grams else 0.0


def summarize(gens: list[Generation]) -> dict:
    tokens = sum(g.decode_tokens for g in gens)
    ms = sum(g.decode_ms for g in gens)
    rounds = [r for g in gens for r in g.rounds]
    return {
        "decode_tok_s": round(1000.0 * tokens / ms, 2) if ms else 0.0,
        "commit_mean": round(statistics.fmean(g.commit_mean for g in gens), 3) if gens else 0.0,
        "step_ms": round(ms / len(rounds), 3) if rounds else 0.0,
        "draft_ms": round(statistics.fmean(r.draft_ms for r in rounds), 3) if rounds else 0.0,
        "tree_ms": round(statistics.fmean(r.tree_ms for r in rounds), 3) if rounds else 0.0,
        "verify_ms": round(statistics.fmean(r.verify_ms for r in rounds), 3) if rounds else 0.0,
        "decode_tokens": tokens,
        "prompts": len(gens),
        "repeated_8gram_frac": round(statistics.fmean(repeated_ngram_fraction(g.tokens) for g in gens), 3)
        if gens else 0.0,
    }


def run(args: argparse.Namespace) -> dict:
    torch.manual_seed(0)
    bundle = load_bundle(args.model_path, args.draft_model_path, device=args.device, dtype=args.dtype)
    prompts = load_prompts(Path(args.prompts), args.types, args.limit)
    if not prompts:
        raise SystemExit("no prompts to run (check --prompts and --types)")
    decoders = {
        m: Decoder(bundle.target, bundle.drafter, method=m, budget=args.budget if m == "ddtree" else None,
                   block_size=args.block_size, draft_window=args.draft_window)
        for m in args.methods
    }
    encoded = [bundle.tokenizer.encode(p["prompt"]) for p in prompts]
    for dec in decoders.values():  # warm-up: first calls pay for allocation and kernel selection
        dec.generate(encoded[0], max_new_tokens=16, ignore_eos=True)

    results: dict[str, dict[str, list[Generation]]] = {m: {} for m in args.methods}
    lossless = {m: True for m in args.methods}
    for i, (row, ids) in enumerate(zip(prompts, encoded, strict=True)):
        order = args.methods[i % len(args.methods):] + args.methods[: i % len(args.methods)]
        outs = {}
        for m in order:
            g = decoders[m].generate(ids, max_new_tokens=args.max_new_tokens, ignore_eos=True)
            outs[m] = g
            results[m].setdefault(row.get("type", "text"), []).append(g)
        if "ar" in outs:
            for m, g in outs.items():
                lossless[m] &= g.tokens == outs["ar"].tokens
        if not args.json:
            print(f"  {row['id']:<10} " + "  ".join(
                f"{m} {outs[m].decode_tok_per_s:7.1f} tok/s c={outs[m].commit_mean:4.2f}" for m in args.methods),
                file=sys.stderr, flush=True)

    report: dict[str, dict] = {}
    for m in args.methods:
        every = [g for gs in results[m].values() for g in gs]
        report[m] = summarize(every)
        report[m]["by_type"] = {t: summarize(gs) for t, gs in results[m].items()}
        report[m]["lossless_vs_ar"] = lossless[m] if "ar" in args.methods else None
        report[m]["budget"] = decoders[m].budget if m == "ddtree" else None
        report[m]["block_size"] = decoders[m].block_size if m != "ar" else 1
    if "ar" in report:
        for m in args.methods:
            report[m]["speedup_vs_ar"] = _ratio(report[m], report["ar"])
            for t in report[m]["by_type"]:
                report[m]["by_type"][t]["speedup_vs_ar"] = _ratio(report[m]["by_type"][t], report["ar"]["by_type"][t])
    return report


def _ratio(a: dict, b: dict) -> float | None:
    return round(a["decode_tok_s"] / b["decode_tok_s"], 3) if b["decode_tok_s"] else None


def print_table(report: dict, max_new_tokens: int) -> None:
    types = sorted({t for r in report.values() for t in r["by_type"]})
    print(f"decode only (prefill excluded), ignore_eos, {max_new_tokens} new tokens per prompt")
    print(f"{'method':<8} {'type':<6} {'tok/s':>8} {'commit':>7} {'step ms':>8} {'vs AR':>6} {'repeat':>6} lossless")
    for m, r in report.items():
        for t, s in [("all", r)] + [(t, r["by_type"][t]) for t in types if t in r["by_type"]]:
            sp = s.get("speedup_vs_ar")
            print(f"{m:<8} {t:<6} {s['decode_tok_s']:>8.1f} {s['commit_mean']:>7.2f} {s['step_ms']:>8.2f} "
                  f"{(f'{sp:.2f}x' if sp else '-'):>6} {s['repeated_8gram_frac']:>6.2f} {r['lossless_vs_ar']}")
    print("repeat = share of output 8-grams seen earlier in the same output; high values mean "
          "looping text is inflating the commit length")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine.bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model-path", default=None, help="target model directory (default: the bundled target)")
    p.add_argument("--draft-model-path", default=None, help="DFlash drafter directory (default: the bundled drafter)")
    p.add_argument("--prompts", default=str(BENCH_PROMPTS_PATH), help="JSONL file with prompt, type and id fields")
    p.add_argument("--types", type=lambda s: s.split(","), default=None, help="comma-separated text types to run")
    p.add_argument("--limit", type=int, default=None, help="at most this many prompts per text type")
    p.add_argument("--max-new-tokens", type=int, default=128, help="tokens generated per prompt")
    p.add_argument("--budget", type=int, default=None,
                   help="DDTree node budget (default: block size - 1, as `specengine serve` and the DDTree reference)")
    p.add_argument("--block-size", type=int, default=None, help="draft block size (default: the drafter's)")
    p.add_argument("--draft-window", type=int, default=None, help="drafter attention window (default: full context)")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(METHODS), help="methods to compare")
    p.add_argument("--device", default="cpu", help="torch device")
    p.add_argument("--dtype", default="float32", help="float32 or bfloat16")
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by method")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    bad = [m for m in args.methods if m not in METHODS]
    if bad:
        print(f"unknown method {bad[0]!r}; choose from {', '.join(METHODS)}", file=sys.stderr)
        return 2
    report = run(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report, args.max_new_tokens)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
