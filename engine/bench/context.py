"""Commit length and step time against context length, on the same text
(`python -m engine.bench.context`).

Each text is one long held-out passage and one cut point in it; the prompt at context c
is the c tokens that end at that cut, so every context asks for the continuation of the
same place in the same text and only how much of the past the engine sees changes. That
separates the two effects a context sweep mixes: the verify step gets slower as the KV
cache grows (physics), while the commit length should not move with context when the
drafter was trained across the whole context (a drafter trained only on short sequences
commits less and less as the context grows).

Two measurements, because a generation changes the text it is measured on:
- same text: the commit of the first verify round after each of `--cuts` cut points per
  passage. Everything the drafter and the target see is the passage itself, identical at
  every context up to where it starts.
- generation: `--max-new-tokens` per prompt, with step time and the repeated-8-gram share
  of the output. Its commit also follows what the model writes, and a small model loops
  more the more it has read, which raises commit with context for reasons of text.
The verdict needs both (`curves` says why).

Texts are the corpus's held-out files, which the bundled pair never trained on: `code`
cuts right after a `def ...:` line (the model writes a body), `prose` is their docstrings
and comments joined into one English passage, cut after a sentence.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.bench.summary import repeated_ngram_fraction
from engine.checkpoint import load_bundle
from engine.decode import METHODS, Decoder
from engine.train.corpus import read_text, split_files, stdlib_root

CONTEXTS = (64, 512, 1000, 1900)
STABLE_WITHIN = 0.15  # commit at the longest context against the shortest (see curves)
CUTS = 8  # same-text cut points per passage, CUT_STRIDE tokens apart, ending at its cut
CUT_STRIDE = 16


@dataclass
class Passage:
    type: str
    source: str
    text: str  # the text up to the cut point (the prompt ends where it ends)


def _docstrings_and_comments(source: str) -> list[str]:
    out = []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc and len(doc) > 80:
                out.append(doc)
    comment = []
    for line in source.splitlines():
        s = line.strip()
        if s.startswith("# ") and not s.startswith("#!"):
            comment.append(s[2:])
        elif comment:
            if len(comment) >= 2:
                out.append(" ".join(comment))
            comment = []
    return out


def passages(kind: str, count: int, need: int, root: Path | None = None) -> list[Passage]:
    """`count` cut points spread evenly over the held-out stream of `kind`, each with at
    least `need` bytes of the same stream before it."""
    _, held = split_files(root or stdlib_root())
    if kind == "code":
        stream = "\n".join(read_text(p) for p in held)
        ends = [
            i + len(line) + 1
            for i, line in _lines_with_offsets(stream)
            if line.lstrip().startswith("def ") and line.rstrip().endswith(":")
        ]
    elif kind == "prose":
        stream = "\n\n".join(d for p in held for d in _docstrings_and_comments(read_text(p)))
        ends = [i + 2 for i in range(len(stream) - 1) if stream[i : i + 2] == ". "]
    else:
        raise ValueError(f"unknown text type {kind!r}; expected code or prose")
    ends = [e for e in ends if e >= need]
    if len(ends) < count:
        raise SystemExit(f"only {len(ends)} {kind} cut points with {need} characters before them")
    step = len(ends) / count
    picked = [ends[int(i * step + step / 2)] for i in range(count)]
    # Enough text before the cut for `need` tokens in any tokenizer (one per byte at most).
    return [
        Passage(kind, f"held-out {kind} @ char {e}", stream[max(0, e - 8 * need) : e])
        for e in picked
    ]


def _lines_with_offsets(text: str):
    pos = 0
    for line in text.split("\n"):
        yield pos, line
        pos += len(line) + 1


def run(
    decoder: Decoder,
    texts: list[Passage],
    contexts: list[int],
    max_new_tokens: int,
    tokenizer,
    cuts: int = CUTS,
    cut_stride: int = CUT_STRIDE,
) -> dict:
    """Both measurements, interleaved per text so drift hits every context alike."""
    rows, first = [], []
    need = tokens_needed(contexts, cuts, cut_stride)
    for p in texts:
        tail = tokenizer.encode(p.text)
        if len(tail) < need:
            raise ValueError(f"{p.source} has {len(tail)} tokens; these contexts need {need}")
        for c in contexts:
            ids = tail[-c:]
            g = decoder.generate(ids, max_new_tokens=max_new_tokens, ignore_eos=True)
            rows.append(
                {
                    "type": p.type,
                    "source": p.source,
                    "context": len(ids),
                    "commit": g.commit_mean,
                    "step_ms": statistics.median(r.step_ms for r in g.rounds),
                    "decode_tok_s": g.decode_tok_per_s,
                    "repeated_8gram_frac": repeated_ngram_fraction(g.tokens),
                }
            )
        for k in range(cuts):
            end = len(tail) - k * cut_stride
            for c in contexts:
                first.append(
                    {
                        "type": p.type,
                        "source": p.source,
                        "cut": k,
                        "context": c,
                        "commit": first_round_commit(decoder, tail[end - c : end]),
                    }
                )
    return {
        "rows": rows,
        "first_round_rows": first,
        "curves": curves(rows, first, contexts),
    }


def tokens_needed(contexts: list[int], cuts: int, cut_stride: int = CUT_STRIDE) -> int:
    """Tokens a passage must hold: the longest context before its earliest cut point."""
    return max(contexts) + (cuts - 1) * cut_stride


def first_round_commit(decoder: Decoder, prompt_ids: list[int]) -> int:
    """Tokens the first verify round commits after a real-text prompt. One more token than
    a block can commit is asked for, so the length cap never cuts that round short."""
    g = decoder.generate(prompt_ids, max_new_tokens=decoder.block_size + 1, ignore_eos=True)
    return g.rounds[0].commit_len


def curves(rows: list[dict], first: list[dict], contexts: list[int]) -> dict:
    """Per text type: both curves and the verdict. The drafter holds up across the context
    when its same-text commit at the longest context is within STABLE_WITHIN of the
    shortest and the generation's commit does not fall by more than that. A generation
    may rise (the model loops more the more it has read, and the repeat share shows it),
    but a drafter that cannot pick the recent rows out of a long context makes it fall.
    First rounds alone miss that failure: right after human text there is nothing recent
    to copy, so short and long context draft equally badly there."""
    out = {}
    for kind in sorted({r["type"] for r in rows} | {r["type"] for r in first}):
        same = same_text_curve([r for r in first if r["type"] == kind], contexts)
        gen = generation_curve([r for r in rows if r["type"] == kind], contexts)
        out[kind] = {
            "same_text": same,
            "generation": gen,
            "drafter_holds_up": same["stable"] and gen["holds"],
        }
    return out


def _per_text(rows: list[dict], contexts: list[int]) -> list[dict[int, float]]:
    """Each text's mean commit per context (the mean over its cut points, if several)."""
    out = []
    for src in sorted({r["source"] for r in rows}):
        mine = [r for r in rows if r["source"] == src]
        out.append(
            {c: statistics.fmean(r["commit"] for r in mine if r["context"] == c) for c in contexts}
        )
    return out


def _paired_ratio(texts: list[dict[int, float]], lo: int, hi: int, stat, resamples: int = 2000):
    """stat(commit at hi) / stat(commit at lo) over texts, and a 95% bootstrap interval that
    resamples whole texts, so both contexts of a text move together (the ratio is paired)."""

    def ratio(sample: list[dict[int, float]]) -> float:
        return stat([t[hi] for t in sample]) / stat([t[lo] for t in sample])

    rng = random.Random(0)  # a fixed seed: the same rows always give the same interval
    boot = sorted(ratio(rng.choices(texts, k=len(texts))) for _ in range(resamples))
    return ratio(texts), [boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1]]


def generation_curve(rows: list[dict], contexts: list[int]) -> dict:
    points = []
    for c in contexts:
        mine = [r for r in rows if r["context"] == c]
        points.append(
            {
                "context": c,
                "texts": len(mine),
                "commit": statistics.median(r["commit"] for r in mine),
                "commit_mean": statistics.fmean(r["commit"] for r in mine),
                "step_ms": statistics.median(r["step_ms"] for r in mine),
                "decode_tok_s": statistics.median(r["decode_tok_s"] for r in mine),
                "repeated_8gram_frac": statistics.fmean(r["repeated_8gram_frac"] for r in mine),
            }
        )
    point, ci = _paired_ratio(
        _per_text(rows, contexts), contexts[0], contexts[-1], statistics.median
    )
    return {
        "points": points,
        "commit_longest_over_shortest": point,
        "ci95": ci,
        "holds": point >= 1 - STABLE_WITHIN,
    }


def same_text_curve(rows: list[dict], contexts: list[int]) -> dict:
    """Mean first-round commit per context; the longest over the shortest as a ratio of
    means over texts, with its paired 95% bootstrap interval."""
    texts = _per_text(rows, contexts)
    point, ci = _paired_ratio(texts, contexts[0], contexts[-1], statistics.fmean)
    return {
        "points": [
            {
                "context": c,
                "texts": len(texts),
                "samples": sum(1 for r in rows if r["context"] == c),
                "commit_mean": statistics.fmean(t[c] for t in texts),
            }
            for c in contexts
        ],
        "commit_longest_over_shortest": point,
        "ci95": ci,
        "stable": abs(point - 1) <= STABLE_WITHIN,
    }


def print_curves(report: dict, out=sys.stdout) -> None:
    for kind, curve in report["curves"].items():
        same, gen = curve["same_text"], curve["generation"]
        n, samples = same["points"][0]["texts"], same["points"][0]["samples"]
        print(f"{kind} ({n} texts)", file=out)
        tokens = report.get("config", {}).get("max_new_tokens", "")
        print(f"  {'context':>8} {'1st-round':>9} | {tokens}-token generation, medians:", file=out)
        print(
            f"  {'':>8} {'commit':>9} | {'commit':>7} {'step ms':>8} {'tok/s':>7} {'8g-rep':>6}",
            file=out,
        )
        for s, g in zip(same["points"], gen["points"], strict=True):
            print(
                f"  {s['context']:>8} {s['commit_mean']:>9.2f} | {g['commit']:>7.2f}"
                f" {g['step_ms']:>8.2f} {g['decode_tok_s']:>7.0f} {g['repeated_8gram_frac']:>6.2f}",
                file=out,
            )
        (slo, shi), (glo, ghi) = same["ci95"], gen["ci95"]
        print(
            f"  same text ({samples} cut points): longest / shortest context "
            f"{same['commit_longest_over_shortest']:.2f} (95% CI {slo:.2f}-{shi:.2f}), "
            f"{'within' if same['stable'] else 'NOT within'} {STABLE_WITHIN:.0%}",
            file=out,
        )
        print(
            f"  generation: longest / shortest {gen['commit_longest_over_shortest']:.2f} "
            f"(95% CI {glo:.2f}-{ghi:.2f}), "
            f"{'does not fall' if gen['holds'] else 'FALLS'} more than {STABLE_WITHIN:.0%} "
            "(a rise is text: see the repeat share)",
            file=out,
        )
        verdict = "yes" if curve["drafter_holds_up"] else "NO"
        print(f"  drafter holds up across the context: {verdict}", file=out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m engine.bench.context",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--model-path", default=None, help="target directory (default: bundled)")
    p.add_argument("--draft-model-path", default=None, help="drafter directory (default: bundled)")
    p.add_argument(
        "--contexts",
        type=lambda s: sorted({int(x) for x in s.split(",")}),
        default=list(CONTEXTS),
        help="comma-separated prompt lengths in tokens",
    )
    p.add_argument(
        "--types", type=lambda s: s.split(","), default=["code", "prose"], help="text types"
    )
    p.add_argument("--texts", type=int, default=24, help="passages per text type")
    p.add_argument(
        "--cuts",
        type=int,
        default=CUTS,
        help=f"same-text cut points per passage, {CUT_STRIDE} apart",
    )
    p.add_argument("--max-new-tokens", type=int, default=128, help="tokens generated per prompt")
    p.add_argument("--method", choices=METHODS, default="ddtree", help="decoding method")
    p.add_argument("--budget", type=int, default=None, help="DDTree node budget (default: B-1)")
    p.add_argument("--corpus", default=None, help="directory of .py files (default: stdlib)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.cuts < 1 or args.texts < 1:
        raise SystemExit("--cuts and --texts must be at least 1")
    bundle = load_bundle(args.model_path, args.draft_model_path)
    longest = max(args.contexts)
    if longest + args.max_new_tokens > bundle.max_context:
        raise SystemExit(
            f"context {longest} + {args.max_new_tokens} new tokens exceeds the model's "
            f"{bundle.max_context}-token context"
        )
    decoder = Decoder(bundle.target, bundle.drafter, method=args.method, budget=args.budget)
    root = Path(args.corpus) if args.corpus else None
    need = tokens_needed(args.contexts, args.cuts)
    texts = [p for kind in args.types for p in passages(kind, args.texts, need, root)]
    report = run(
        decoder, texts, args.contexts, args.max_new_tokens, bundle.tokenizer, cuts=args.cuts
    )
    report["config"] = {
        "method": args.method,
        "budget": decoder.budget,
        "max_new_tokens": args.max_new_tokens,
        "cuts": args.cuts,
        "cut_stride": CUT_STRIDE,
        "drafter": str(bundle.draft_model_path),
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_curves(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
