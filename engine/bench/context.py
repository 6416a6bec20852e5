"""Commit length and step time against context length, on the same text
(`python -m engine.bench.context`).

Each text is one long held-out passage and one cut point in it; the prompt at context c
is the c tokens that end at that cut, so every context asks for the continuation of the
same place in the same text and only how much of the past the engine sees changes. That
separates the two effects a context sweep mixes: the verify step gets slower as the KV
cache grows (physics), while the commit length should not move with context when the
drafter was trained across the whole context (a drafter trained only on short sequences
commits less and less as the context grows).

Texts are the corpus's held-out files, which the bundled pair never trained on: `code`
cuts right after a `def ...:` line (the model writes a body), `prose` is their docstrings
and comments joined into one English passage, cut after a sentence.
"""

from __future__ import annotations

import argparse
import ast
import json
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
STABLE_WITHIN = 0.15  # commit at the longest context within 15% of the shortest


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
    decoder: Decoder, texts: list[Passage], contexts: list[int], max_new_tokens: int, tokenizer
) -> dict:
    rows = []
    for p in texts:
        tail = tokenizer.encode(p.text)
        for c in contexts:  # interleaved per text, so drift hits every context alike
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
    return {"rows": rows, "curves": curves(rows, contexts)}


def curves(rows: list[dict], contexts: list[int]) -> dict:
    """Per text type and context: medians over the texts; then longest over shortest."""
    out = {}
    for kind in sorted({r["type"] for r in rows}):
        points = []
        for c in contexts:
            mine = [r for r in rows if r["type"] == kind and r["context"] == c]
            points.append(
                {
                    "context": c,
                    "texts": len(mine),
                    "commit": statistics.median(r["commit"] for r in mine),
                    "step_ms": statistics.median(r["step_ms"] for r in mine),
                    "decode_tok_s": statistics.median(r["decode_tok_s"] for r in mine),
                    "repeated_8gram_frac": statistics.fmean(r["repeated_8gram_frac"] for r in mine),
                }
            )
        ratio = points[-1]["commit"] / points[0]["commit"]
        out[kind] = {
            "points": points,
            "commit_longest_over_shortest": ratio,
            "commit_stable": abs(ratio - 1) <= STABLE_WITHIN,
        }
    return out


def print_curves(report: dict, out=sys.stdout) -> None:
    for kind, curve in report["curves"].items():
        n = curve["points"][0]["texts"]
        print(f"{kind} ({n} texts, medians)", file=out)
        print(f"  {'context':>8} {'commit':>7} {'step ms':>8} {'tok/s':>7} {'8g-rep':>6}", file=out)
        for pt in curve["points"]:
            print(
                f"  {pt['context']:>8} {pt['commit']:>7.2f} {pt['step_ms']:>8.2f}"
                f" {pt['decode_tok_s']:>7.0f} {pt['repeated_8gram_frac']:>6.2f}",
                file=out,
            )
        verdict = "stable" if curve["commit_stable"] else "NOT stable"
        print(
            f"  commit at the longest / shortest context: "
            f"{curve['commit_longest_over_shortest']:.2f} ({verdict} within "
            f"{STABLE_WITHIN:.0%})",
            file=out,
        )


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
    p.add_argument("--texts", type=int, default=6, help="passages (cut points) per text type")
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
    bundle = load_bundle(args.model_path, args.draft_model_path)
    longest = max(args.contexts)
    if longest + args.max_new_tokens > bundle.max_context:
        raise SystemExit(
            f"context {longest} + {args.max_new_tokens} new tokens exceeds the model's "
            f"{bundle.max_context}-token context"
        )
    decoder = Decoder(bundle.target, bundle.drafter, method=args.method, budget=args.budget)
    root = Path(args.corpus) if args.corpus else None
    texts = [p for kind in args.types for p in passages(kind, args.texts, longest, root)]
    report = run(decoder, texts, args.contexts, args.max_new_tokens, bundle.tokenizer)
    report["config"] = {
        "method": args.method,
        "budget": decoder.budget,
        "max_new_tokens": args.max_new_tokens,
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
