"""Where a round goes, robust to a busy machine (`python -m engine.bench.profile`).

For AR, DFlash and DDTree at each budget, every prompt is decoded `--repeat` times. The
repeats of a prompt run the same rounds on the same tokens, so each round's phase times
are taken as their least over the repeats (another process can only add time to a run:
the least is the closest to what the engine itself costs), then averaged over the rounds
and the prompts. Commit lengths do not depend on the machine. `--ops` adds torch.profiler
tables (top ops by their own time) of one verify forward and one draft forward at the
first budget.

`--op-counts` adds the torch ops each arm dispatches per decode round (the first prompt of
each text type, prefill excluded). Unlike times, the count does not depend on what else
the machine runs: on a shared host it tells whether a change removed work from a round
when a few percent of time cannot be resolved.

This is for steering optimisation work; the verdict on speed stays with the paired
ratios of `python -m engine.bench`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from engine.bench.prompts import load_prompts
from engine.checkpoint import load_bundle
from engine.decode import Decoder, Generation
from engine.train.corpus import BENCH_PROMPTS_PATH

PHASES = ("draft_ms", "tree_ms", "verify_ms", "commit_ms")
NEW = 9  # context rows a draft forward adds in the op tables (about one round's commit)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m engine.bench.profile", description=__doc__)
    p.add_argument("--prompts", default=str(BENCH_PROMPTS_PATH))
    p.add_argument("--limit", type=int, default=2, help="prompts per text type")
    p.add_argument("--budgets", type=lambda s: [int(b) for b in s.split(",")], default=[15])
    p.add_argument("--repeat", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--ops", action="store_true", help="add per-op tables of verify and draft")
    p.add_argument("--op-counts", action="store_true", help="add torch ops per round per arm")
    p.add_argument("--json", action="store_true")
    return p


def phase_floor(runs: list[Generation]) -> dict[str, float]:
    """Per phase (ms): for each round, the least over the repeats of that round (repeats of
    one prompt run the same rounds on the same tokens), then the mean over rounds."""
    out = {}
    for phase in PHASES:
        per_round = zip(*([getattr(r, phase) for r in g.rounds] for g in runs), strict=True)
        out[phase] = round(statistics.fmean(min(times) for times in per_round), 4)
    # The sum of the phases' floors: a whole round of a few ms is rarely spared by a busy
    # machine in any repeat, each of its phases more often.
    out["step_ms"] = round(sum(out[p] for p in PHASES), 4)
    out["commit_mean"] = round(runs[0].commit_mean, 3)
    out["tok_s_floor"] = round(1000.0 * out["commit_mean"] / out["step_ms"], 1)
    return out


def prompt_floor(floors: list[dict[str, float]]) -> dict[str, float]:
    """The mean over prompts of each prompt's floors; tok/s from the means."""
    out = {k: round(statistics.fmean(f[k] for f in floors), 4) for k in floors[0]}
    out["tok_s_floor"] = round(1000.0 * out["commit_mean"] / out["step_ms"], 1)
    return out


def arms(bundle, budgets: list[int]) -> dict[str, Decoder]:
    out = {"ar": Decoder(bundle.target, method="ar")}
    out["dflash"] = Decoder(bundle.target, bundle.drafter, method="dflash")
    for b in budgets:
        out[f"ddtree-{b}"] = Decoder(bundle.target, bundle.drafter, method="ddtree", budget=b)
    return out


def profile_rounds(args) -> dict:
    bundle = load_bundle()
    rows = load_prompts(Path(args.prompts), None, args.limit)
    encoded = [(r.get("type", "text"), bundle.tokenizer.encode(r["prompt"])) for r in rows]
    decoders = arms(bundle, args.budgets)
    for dec in decoders.values():
        dec.generate(encoded[0][1], max_new_tokens=16, ignore_eos=True)
    report: dict[str, dict] = {}
    for kind in dict.fromkeys(k for k, _ in encoded):
        prompts = [ids for k, ids in encoded if k == kind]
        for name, dec in decoders.items():
            floors = [
                phase_floor(
                    [
                        dec.generate(ids, max_new_tokens=args.max_new_tokens, ignore_eos=True)
                        for _ in range(args.repeat)
                    ]
                )
                for ids in prompts
            ]
            report.setdefault(kind, {})[name] = prompt_floor(floors)
    return report


class _OpCounter(TorchDispatchMode):
    """Counts the aten ops dispatched while it is active (views and in-place ops included)."""

    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def ops_per_round(decoder: Decoder, ids: list[int], max_new_tokens: int) -> float:
    """Mean torch ops one decode round dispatches (the prefill step excluded), counted on
    the second of two identical requests: what the first grows once per model (the RoPE
    tables) is not a round's work."""
    decoder.generate(ids, max_new_tokens=max_new_tokens, ignore_eos=True)
    with _OpCounter() as counter:
        steps = decoder.stream(ids, max_new_tokens=max_new_tokens, ignore_eos=True)
        next(steps)  # the prefill
        after_prefill, rounds = counter.ops, sum(1 for _ in steps)
    return round((counter.ops - after_prefill) / rounds, 1) if rounds else 0.0


def op_counts(args) -> dict[str, dict[str, float]]:
    """{type: {arm: torch ops per round}} on the first prompt of each text type."""
    bundle = load_bundle()
    rows = load_prompts(Path(args.prompts), None, 1)
    decoders = arms(bundle, args.budgets)
    return {
        r.get("type", "text"): {
            name: ops_per_round(dec, bundle.tokenizer.encode(r["prompt"]), args.max_new_tokens)
            for name, dec in decoders.items()
        }
        for r in rows
    }


def op_tables(budget: int, rows: int = 20) -> dict[str, str]:
    """torch.profiler tables of one verify forward (a `budget` tree) and one draft forward."""
    from torch.profiler import ProfilerActivity, profile

    from engine.tree import build_tree
    from engine.verify_inputs import TreeMask

    bundle = load_bundle()
    target, drafter = bundle.target, bundle.drafter
    ids = bundle.tokenizer.encode(load_prompts(BENCH_PROMPTS_PATH, ["code"], 1)[0]["prompt"])
    n, layers = len(ids), drafter.target_layer_ids
    dec = Decoder(target, drafter, method="ddtree", budget=budget)
    with torch.inference_mode():
        cache = target.new_cache(dec.max_context)
        logits, hidden = target(
            torch.tensor([ids]), torch.arange(n)[None], cache, output_layers=layers
        )
        session = dec.new_draft_session()
        bonus = int(logits[0, -1].argmax())
        # A round in the middle of a request: the draft cache holds the context up to the
        # last commit, and the rows that round committed (NEW of them) are pending.
        session.add_context([h[:, : n - NEW] for h in hidden])
        session.propose(bonus, n - NEW, dec.block_size)
        pending = drafter.fuse([h[:, n - NEW :] for h in hidden])

        def draft():
            session.cache.crop(n - NEW)
            session.pending = pending
            return session.propose(bonus, n, dec.block_size)

        tree = build_tree(bonus, draft(), budget)
        tree_ids = torch.tensor([tree.tokens])
        pos = tree.position_ids(n, "cpu")
        groups = target.config.num_attention_heads // target.config.num_key_value_heads
        mask = TreeMask(target.dtype, target.device, groups)(tree, n)  # folded, as decoding

        def verify():
            target(tree_ids, pos, cache, attn_mask=mask, output_layers=layers)
            cache.crop(n)

        out = {}
        for name, fn in (("verify", verify), ("draft", draft)):
            for _ in range(20):
                fn()
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(100):
                    fn()
            out[name] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    report = {"threads": torch.get_num_threads(), "rounds": profile_rounds(args)}
    if args.ops:
        report["ops"] = op_tables(args.budgets[0])
    if args.op_counts:
        report["op_counts"] = op_counts(args)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"torch threads {report['threads']}; ms per round: least over repeats, mean over rounds")
    print(f"{'type':<6} {'arm':<10} {'draft':>7} {'tree':>7} {'verify':>7} {'commit':>7} "
          f"{'round':>7} {'tau':>6} {'tok/s':>7}")  # fmt: skip
    for kind, by_arm in report["rounds"].items():
        for name, r in by_arm.items():
            print(
                f"{kind:<6} {name:<10} "
                + " ".join(f"{r[p]:>7.3f}" for p in (*PHASES, "step_ms"))
                + f" {r['commit_mean']:>6.2f} {r['tok_s_floor']:>7.1f}"
            )
    for kind, by_arm in report.get("op_counts", {}).items():
        print(f"{kind:<6} torch ops per round: "
              + ", ".join(f"{a} {n:.1f}" for a, n in by_arm.items()))  # fmt: skip
    for name, table in report.get("ops", {}).items():
        print(f"\n{name} forward, 100 calls:\n{table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
