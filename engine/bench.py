"""AR vs DFlash vs DDTree on the same prompts, in one process (`python -m engine.bench`).

Built to give the same verdict on a busy machine as on a quiet one:

- Decode throughput excludes prefill (the first token comes from the prompt forward), every
  request ignores EOS so output lengths are fixed, and every output is checked against AR
  (lossless).
- Methods are interleaved per prompt and the whole round is repeated (`--repeat`, default
  3), rotating the order, so each method's run sits next to an AR run of the same prompt.
- The verdict is paired: for each prompt and repeat, method tok/s / AR tok/s from those
  neighbouring runs; a prompt's ratio is the median over its repeats; `speedup_vs_ar` is the
  median over prompts, with the interquartile range, the number of prompts outside Tukey's
  fences (1.5 IQR) and `repeat_spread`, how far one prompt's repeated ratios disagree (the
  machine's noise). Slow and fast prompts count alike: nothing is summed across prompts,
  so `decode_tok_s` and step times are medians over prompts too.
- Memory next to speed: the KV cache bytes each request grew to (target + drafter), and on
  CUDA the allocator's peak above the weights during the request.

The commit length is the mean over responses of each response's mean, as the DDTree paper
reports it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from engine.checkpoint import load_bundle
from engine.decode import METHODS, Decoder, Generation
from engine.train.corpus import BENCH_PROMPTS_PATH

MIB = 1024 * 1024


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


@dataclass
class PromptRuns:
    """One prompt's repeated runs of one method, and the AR runs they were paired with."""

    id: str
    type: str
    runs: list[Generation] = field(default_factory=list)
    device_peak_bytes: list[int] = field(default_factory=list)  # CUDA only
    ratios: list[float] = field(default_factory=list)            # vs the neighbouring AR run

    @property
    def tok_s(self) -> float:
        return statistics.median(g.decode_tok_per_s for g in self.runs)

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    """(q1, median, q3); a single value is its own quartiles."""
    if len(xs) < 2:
        return (xs[0],) * 3 if xs else (0.0, 0.0, 0.0)
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def tukey_outliers(xs: list[float]) -> int:
    q1, _, q3 = quartiles(xs)
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return sum(1 for x in xs if x < lo or x > hi)


def _median_over_prompts(prompts: list[PromptRuns], per_run) -> float:
    return round(statistics.median(statistics.median(per_run(g) for g in p.runs)
                                   for p in prompts), 3)


def summarize(prompts: list[PromptRuns]) -> dict:
    if not prompts:
        return {"decode_tok_s": 0.0, "commit_mean": 0.0, "step_ms": 0.0, "prompts": 0,
                "decode_tokens": 0}
    first = [p.runs[0] for p in prompts]  # tokens and commits are the same in every repeat
    q1, tok_s, q3 = quartiles([p.tok_s for p in prompts])
    kv = [g.kv_cache_bytes for p in prompts for g in p.runs]
    device = [b for p in prompts for b in p.device_peak_bytes]
    out = {
        "decode_tok_s": round(tok_s, 2),
        "decode_tok_s_iqr": [round(q1, 2), round(q3, 2)],
        "commit_mean": round(statistics.fmean(g.commit_mean for g in first), 3),
        "step_ms": _median_over_prompts(prompts, lambda g: g.decode_ms / max(1, len(g.rounds))),
        "draft_ms": _median_over_prompts(prompts, lambda g: _mean_phase(g, "draft_ms")),
        "tree_ms": _median_over_prompts(prompts, lambda g: _mean_phase(g, "tree_ms")),
        "verify_ms": _median_over_prompts(prompts, lambda g: _mean_phase(g, "verify_ms")),
        "decode_tokens": sum(g.decode_tokens for g in first),  # per pass over the prompts
        "prompts": len(prompts),
        "repeated_8gram_frac": round(statistics.fmean(repeated_ngram_fraction(g.tokens)
                                                      for g in first), 3),
        "kv_cache_peak_mib": round(max(kv) / MIB, 3),
        "device_peak_mib": round(max(device) / MIB, 3) if device else None,
    }
    ratios = [p.ratio for p in prompts if p.ratio is not None]
    if ratios:
        q1, med, q3 = quartiles(ratios)
        out["speedup_vs_ar"] = round(med, 3)
        out["speedup_iqr"] = [round(q1, 3), round(q3, 3)]
        out["speedup_outliers"] = tukey_outliers(ratios)
        out["repeat_spread"] = round(statistics.median(
            (max(p.ratios) - min(p.ratios)) / p.ratio for p in prompts if p.ratio), 4)
    return out


def _mean_phase(g: Generation, phase: str) -> float:
    return statistics.fmean(getattr(r, phase) for r in g.rounds) if g.rounds else 0.0


def _measure(decoder: Decoder, ids: list[int], max_new_tokens: int, cuda: bool) -> tuple[Generation, int]:
    """One request, and on CUDA the allocator's peak above what was allocated before it."""
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    g = decoder.generate(ids, max_new_tokens=max_new_tokens, ignore_eos=True)
    peak = torch.cuda.max_memory_allocated() - base if cuda else 0
    return g, peak


def run(args: argparse.Namespace) -> dict:
    torch.manual_seed(0)
    bundle = load_bundle(args.model_path, args.draft_model_path, device=args.device, dtype=args.dtype)
    prompts = load_prompts(Path(args.prompts), args.types, args.limit)
    if not prompts:
        raise SystemExit("no prompts to run (check --prompts and --types)")
    methods = args.methods
    decoders = {
        m: Decoder(bundle.target, bundle.drafter, method=m, budget=args.budget if m == "ddtree" else None,
                   block_size=args.block_size, draft_window=args.draft_window)
        for m in methods
    }
    cuda = bundle.target.device.type == "cuda"
    encoded = [bundle.tokenizer.encode(p["prompt"]) for p in prompts]
    for dec in decoders.values():  # warm-up: first calls pay for allocation and kernel selection
        dec.generate(encoded[0], max_new_tokens=16, ignore_eos=True)

    results: dict[str, list[PromptRuns]] = {m: [] for m in methods}
    lossless = {m: True for m in methods}
    for i, (row, ids) in enumerate(zip(prompts, encoded, strict=True)):
        kind = row.get("type", "text")
        runs = {m: PromptRuns(str(row.get("id", i)), kind) for m in methods}
        for rep in range(args.repeat):
            k = (i + rep) % len(methods)  # rotate who goes first, so no method always follows AR
            outs = {}
            for m in methods[k:] + methods[:k]:
                g, peak = _measure(decoders[m], ids, args.max_new_tokens, cuda)
                outs[m] = g
                runs[m].runs.append(g)
                if cuda:
                    runs[m].device_peak_bytes.append(peak)
            if "ar" in outs:
                ar = outs["ar"]
                for m, g in outs.items():
                    lossless[m] &= g.tokens == ar.tokens
                    if ar.decode_tok_per_s > 0:
                        runs[m].ratios.append(g.decode_tok_per_s / ar.decode_tok_per_s)
        for m in methods:
            results[m].append(runs[m])
        if not args.json:
            print(f"  {runs[methods[0]].id:<10} " + "  ".join(
                f"{m} {runs[m].tok_s:7.1f} tok/s c={runs[m].runs[0].commit_mean:4.2f}"
                + (f" {runs[m].ratio:4.2f}x" if runs[m].ratio is not None else "")
                for m in methods), file=sys.stderr, flush=True)

    report: dict[str, dict] = {}
    for m in methods:
        report[m] = summarize(results[m])
        types = sorted({p.type for p in results[m]}, key=[p.type for p in results[m]].index)
        report[m]["by_type"] = {t: summarize([p for p in results[m] if p.type == t]) for t in types}
        report[m]["lossless_vs_ar"] = lossless[m] if "ar" in methods else None
        report[m]["budget"] = decoders[m].budget if m == "ddtree" else None
        report[m]["block_size"] = decoders[m].block_size if m != "ar" else 1
        report[m]["repeat"] = args.repeat
        report[m]["per_prompt"] = [{
            "id": p.id, "type": p.type,
            "decode_tok_s": [round(g.decode_tok_per_s, 2) for g in p.runs],
            "speedup_vs_ar": [round(r, 4) for r in p.ratios] or None,
            "commit_mean": round(p.runs[0].commit_mean, 3),
            "kv_cache_mib": round(max(g.kv_cache_bytes for g in p.runs) / MIB, 3),
            "device_peak_mib": round(max(p.device_peak_bytes) / MIB, 3) if p.device_peak_bytes else None,
        } for p in results[m]]
    return report


def print_table(report: dict, max_new_tokens: int) -> None:
    types = sorted({t for r in report.values() for t in r["by_type"]})
    repeat = next(iter(report.values()))["repeat"]
    gpu = any(r.get("device_peak_mib") is not None for r in report.values())
    print(f"decode only (prefill excluded), ignore_eos, {max_new_tokens} new tokens per prompt, "
          f"{repeat} interleaved repeats")
    print(f"{'method':<8} {'type':<6} {'tok/s':>8} {'commit':>7} {'step ms':>8} {'vs AR':>6} "
          f"{'IQR':>11} {'out':>3} {'noise':>6} {'KV MiB':>7}" + (f" {'GPU MiB':>8}" if gpu else "")
          + f" {'8g-rep':>6} lossless")
    for m, r in report.items():
        for t, s in [("all", r)] + [(t, r["by_type"][t]) for t in types if t in r["by_type"]]:
            sp = s.get("speedup_vs_ar")
            iqr = f"{s['speedup_iqr'][0]:.2f}-{s['speedup_iqr'][1]:.2f}" if sp else "-"
            noise = f"{100 * s['repeat_spread']:.1f}%" if sp else "-"
            line = (f"{m:<8} {t:<6} {s['decode_tok_s']:>8.1f} {s['commit_mean']:>7.2f} "
                    f"{s['step_ms']:>8.2f} {(f'{sp:.2f}x' if sp else '-'):>6} {iqr:>11} "
                    f"{s.get('speedup_outliers', 0):>3} {noise:>6} {s['kv_cache_peak_mib']:>7.2f}")
            if gpu:
                line += f" {s['device_peak_mib'] or 0:>8.1f}"
            print(line + f" {s['repeated_8gram_frac']:>6.2f} {r['lossless_vs_ar']}")
    print("tok/s and step ms: medians over prompts (each prompt: median of its repeats); "
          "vs AR: median over prompts of the paired ratio (each run against the AR run of the "
          "same prompt next to it), IQR its interquartile range, out the prompts outside "
          "1.5 IQR, noise the median spread of a prompt's repeated ratios; KV MiB: the largest "
          "KV cache a request grew to (target + drafter)"
          + ("; GPU MiB: CUDA allocator peak above the weights during a request" if gpu else ""))
    print("8g-rep = share of output 8-grams seen earlier in the same output; high values mean "
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
    p.add_argument("--repeat", type=_at_least_one, default=3,
                   help="interleaved rounds over each prompt; the verdict takes medians over them")
    p.add_argument("--budget", type=int, default=None,
                   help="DDTree node budget (default: block size - 1, as `specengine serve` and the DDTree reference)")
    p.add_argument("--block-size", type=int, default=None, help="draft block size (default: the drafter's)")
    p.add_argument("--draft-window", type=int, default=None, help="drafter attention window (default: full context)")
    p.add_argument("--methods", type=lambda s: s.split(","), default=list(METHODS), help="methods to compare")
    p.add_argument("--device", default="cpu", help="torch device")
    p.add_argument("--dtype", default="float32", help="float32 or bfloat16")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object keyed by method (summaries, by_type, per_prompt)")
    return p


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


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
