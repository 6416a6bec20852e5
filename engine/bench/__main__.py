"""AR vs DFlash vs DDTree on the same prompts, in one process (`python -m engine.bench`).

How the verdict is made robust to a busy machine: engine/bench/__init__.py.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from engine.bench.concurrency import levels, print_concurrency, run_concurrency
from engine.bench.measure import run
from engine.bench.table import print_table, print_temperatures
from engine.decode import METHODS
from engine.train.corpus import BENCH_PROMPTS_PATH


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m engine.bench",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--model-path", default=None, help="target model directory (default: the bundled target)"
    )
    p.add_argument(
        "--draft-model-path",
        default=None,
        help="DFlash drafter directory (default: the bundled drafter)",
    )
    p.add_argument(
        "--prompts",
        default=str(BENCH_PROMPTS_PATH),
        help="JSONL file with prompt, type and id fields",
    )
    p.add_argument(
        "--types",
        type=lambda s: s.split(","),
        default=None,
        help="comma-separated text types to run",
    )
    p.add_argument(
        "--limit", type=int, default=None, help="at most this many prompts per text type"
    )
    p.add_argument("--max-new-tokens", type=int, default=128, help="tokens generated per prompt")
    p.add_argument(
        "--repeat",
        type=_at_least_one,
        default=3,
        help="interleaved rounds over each prompt; the verdict takes medians over them",
    )
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        help="DDTree node budget (default: block size - 1, as `specengine serve` and the "
        "DDTree reference)",
    )
    p.add_argument(
        "--budgets",
        type=_budgets,
        default=[3, 7, 15, 31],
        help="DDTree budgets to run as extra arms, reported per text type under "
        "ddtree.by_budget with the fastest as best_budget ('none' to skip)",
    )
    p.add_argument(
        "--block-size", type=int, default=None, help="draft block size (default: the drafter's)"
    )
    p.add_argument(
        "--draft-window",
        type=int,
        default=None,
        help="drafter attention window (default: full context)",
    )
    p.add_argument(
        "--methods", type=lambda s: s.split(","), default=list(METHODS), help="methods to compare"
    )
    p.add_argument(
        "--temperature",
        type=_temperature,
        default=0.0,
        help="above 0: every arm also runs sampled at this temperature (seeded per prompt), "
        "reported beside temperature 0 with each arm's 8-gram repeat share; the JSON is "
        "then keyed by temperature",
    )
    add_run_args(p)
    p.add_argument("--device", default="cpu", help="torch device")
    p.add_argument("--dtype", default="float32", help="float32 or bfloat16")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object keyed by method (summaries, by_type, per_prompt)",
    )
    return p


def add_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--concurrency",
        type=levels,
        default=None,
        help="comma-separated stream counts (e.g. 1,2,4,8): decode that many streams together "
        "per level and report aggregate and per-stream tok/s per arm, instead of the usual table",
    )
    """What the run compares against and on how many threads."""
    p.add_argument(
        "--peer",
        choices=["vllm"],
        default=None,
        help="instead of the methods: our DDTree and DFlash against vLLM's DFlash on the "
        "same pair and prompts (vLLM from SPECCONSOLE_VLLM_VENV, default "
        "~/.cache/specconsole/vllm-0.32.0)",
    )
    p.add_argument(
        "--threads",
        type=_at_least_one,
        default=None,
        help="torch threads for our decoders (default: torch's; with --peer vllm, the "
        "cores vLLM's CPU worker takes: all but the one its auto binding reserves)",
    )


def _budgets(text: str) -> list[int]:
    if text.strip().lower() in ("", "none"):
        return []
    values = [_at_least_one(v) for v in text.split(",")]
    return list(dict.fromkeys(values))


def _temperature(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


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
    if args.peer == "vllm" and args.temperature > 0:
        print("--temperature is not supported with --peer vllm (greedy only)", file=sys.stderr)
        return 2
    if args.peer == "vllm":
        from engine.bench.peer_vllm import print_peer, run_peer, worker_threads

        torch.set_num_threads(args.threads or worker_threads())
        report = run_peer(args)
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print_peer(report)
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.concurrency:
        report = run_concurrency(args)
        print(json.dumps(report, indent=2)) if args.json else print_concurrency(report)
        return 0
    if args.temperature > 0:
        return _run_temperatures(args)
    report = run(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report, args.max_new_tokens)
    return 0


def _run_temperatures(args: argparse.Namespace) -> int:
    """Temperature 0 and --temperature, same arms and prompts, one after the other."""
    reports = {
        f"{t:g}": run(argparse.Namespace(**{**vars(args), "temperature": t}))
        for t in (0.0, args.temperature)
    }
    if args.json:
        print(json.dumps({"by_temperature": reports}, indent=2))
        return 0
    for t, report in reports.items():
        print(f"== temperature {t} ==")
        print_table(report, args.max_new_tokens)
    print_temperatures(reports)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
