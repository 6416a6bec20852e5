"""Running the methods on the prompts: interleaved per prompt, repeated with the order
rotated, each run paired with the AR run of the same prompt next to it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch

from engine.bench.budgets import budget_report
from engine.bench.prompts import load_prompts
from engine.bench.summary import MIB, PromptRuns, summarize
from engine.checkpoint import load_bundle
from engine.decode import Decoder, Generation
from engine.sampling import GREEDY, SamplingSettings


def settings(args: argparse.Namespace, prompt_index: int) -> SamplingSettings:
    """Greedy at --temperature 0; otherwise sampled with the prompt's index as the seed, so
    a prompt's repeats emit the same tokens (its repeats then time the same work)."""
    t = getattr(args, "temperature", 0.0)
    return GREEDY if t <= 0 else SamplingSettings(temperature=t, seed=prompt_index)


def _measure(
    decoder: Decoder,
    ids: list[int],
    max_new_tokens: int,
    cuda: bool,
    sampling: SamplingSettings = GREEDY,
) -> tuple[Generation, int]:
    """One request, and on CUDA the allocator's peak above what was allocated before it."""
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    g = decoder.generate(ids, max_new_tokens=max_new_tokens, ignore_eos=True, sampling=sampling)
    peak = torch.cuda.max_memory_allocated() - base if cuda else 0
    return g, peak


def arms(args: argparse.Namespace, bundle) -> dict[str, Decoder]:
    """The methods, and one more DDTree arm ("ddtree@7") per budget of --budgets other than
    the DDTree arm's own."""

    def decoder(method: str, budget: int | None) -> Decoder:
        return Decoder(
            bundle.target,
            bundle.drafter,
            method=method,
            budget=budget,
            block_size=args.block_size,
            draft_window=args.draft_window,
        )

    out = {m: decoder(m, args.budget if m == "ddtree" else None) for m in args.methods}
    if "ddtree" in out:
        for b in args.budgets:
            if b != out["ddtree"].budget:
                out[f"ddtree@{b}"] = decoder("ddtree", b)
    return out


def bundle_and_prompts(args: argparse.Namespace) -> tuple[Any, list[dict]]:
    """The bench's weights and prompts as its options name them (seeded first); every
    arm of the bench (speed, concurrency) starts from these."""
    torch.manual_seed(0)
    bundle = load_bundle(
        args.model_path, args.draft_model_path, device=args.device, dtype=args.dtype
    )
    prompts = load_prompts(Path(args.prompts), args.types, args.limit)
    if not prompts:
        raise SystemExit("no prompts to run (check --prompts and --types)")
    return bundle, prompts


def run(args: argparse.Namespace) -> dict:
    bundle, prompts = bundle_and_prompts(args)
    methods = args.methods
    decoders = arms(args, bundle)
    cuda = bundle.target.device.type == "cuda"
    encoded = [bundle.tokenizer.encode(p["prompt"]) for p in prompts]
    for dec in decoders.values():  # warm-up: first calls pay for allocation and kernel selection
        dec.generate(encoded[0], max_new_tokens=16, ignore_eos=True)

    results: dict[str, list[PromptRuns]] = {a: [] for a in decoders}
    lossless = {a: True for a in decoders}
    for i, (row, ids) in enumerate(zip(prompts, encoded, strict=True)):
        runs = run_prompt(decoders, row, i, ids, args, cuda, lossless)
        for a in decoders:
            results[a].append(runs[a])
        if not args.json:
            _print_progress(runs, list(decoders))
    if not settings(args, 0).greedy:  # sampled arms emit different tokens: nothing to compare
        lossless = {a: None for a in decoders}
    report = {
        m: method_report(results[m], decoders[m], lossless[m], methods, args) for m in methods
    }
    if "ddtree" in report and args.budgets:
        report["ddtree"].update(budget_report(results, decoders, lossless))
    return report


def run_prompt(decoders, row, i, ids, args, cuda, lossless) -> dict[str, PromptRuns]:
    """One prompt's interleaved repeats; every run is paired with the AR run beside it."""
    methods = list(decoders)
    runs = {m: PromptRuns(str(row.get("id", i)), row.get("type", "text")) for m in methods}
    for rep in range(args.repeat):
        k = (i + rep) % len(methods)  # rotate who goes first, so no method always follows AR
        outs = {}
        for m in methods[k:] + methods[:k]:
            g, peak = _measure(decoders[m], ids, args.max_new_tokens, cuda, settings(args, i))
            outs[m] = g
            runs[m].runs.append(g)
            if cuda:
                runs[m].device_peak_bytes.append(peak)
        if "ar" in outs:
            ar = outs["ar"]
            for m, g in outs.items():
                lossless[m] = bool(lossless[m]) and g.tokens == ar.tokens
                if ar.decode_tok_per_s > 0:
                    runs[m].ratios.append(g.decode_tok_per_s / ar.decode_tok_per_s)
    return runs


def _print_progress(runs: dict[str, PromptRuns], methods: list[str]) -> None:
    print(
        f"  {runs[methods[0]].id:<10} "
        + "  ".join(
            f"{m} {runs[m].tok_s:7.1f} tok/s c={runs[m].runs[0].commit_mean:4.2f}"
            + (f" {runs[m].ratio:4.2f}x" if runs[m].ratio is not None else "")
            for m in methods
        ),
        file=sys.stderr,
        flush=True,
    )


def method_report(prompts: list[PromptRuns], decoder, lossless, methods, args) -> dict:
    """One method's summary, per text type, and its per-prompt rows."""
    m = decoder.method
    report = summarize(prompts)
    types = sorted({p.type for p in prompts}, key=[p.type for p in prompts].index)
    report["by_type"] = {t: summarize([p for p in prompts if p.type == t]) for t in types}
    report["lossless_vs_ar"] = lossless if "ar" in methods else None
    report["budget"] = decoder.budget if m == "ddtree" else None
    report["block_size"] = decoder.block_size if m != "ar" else 1
    report["repeat"] = args.repeat
    report["per_prompt"] = [_prompt_row(p) for p in prompts]
    return report


def _prompt_row(p: PromptRuns) -> dict:
    return {
        "id": p.id,
        "type": p.type,
        "decode_tok_s": [round(g.decode_tok_per_s, 2) for g in p.runs],
        "speedup_vs_ar": [round(r, 4) for r in p.ratios] or None,
        "commit_mean": round(p.runs[0].commit_mean, 3),
        "kv_cache_mib": round(max(g.kv_cache_bytes for g in p.runs) / MIB, 3),
        "device_peak_mib": round(max(p.device_peak_bytes) / MIB, 3)
        if p.device_peak_bytes
        else None,
    }
