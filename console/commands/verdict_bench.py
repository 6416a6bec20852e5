"""`specconsole bench verdict [HOST]`: how often is the verdict right on a real engine?

Thin over `console.experiments.verdict_bench`: scenarios whose true cause is known (the same
engine twice, context growth, a text change, speculation off, tree budgets, parsers across
a restart, an injected round delay), each `--runs` times and asked through the operator's
own paths (typed `diagnose` on the sweep's passages and on passages it never read,
`history explain`, `set --baseline` with default options,
`--order A-B` and `--bracket`) after calibrating the host once; prints
accuracy per scenario and per path, the false-alarm rate with its 95% upper bound and the
run time, or `--json`. The engine is restarted for the flag scenarios and always ends on
its original flags.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from console.analysis.sample_size import SampleTarget
from console.commands.base import err
from console.commands.restoring import run_restoring
from console.commands.sampling_options import add_sampling_options
from console.experiments.verdict_bench import (
    MAX_ROUNDS,
    MIN_ROUNDS,
    OUTPUT,
    PASSAGES,
    PATH_NAMES,
    SCENARIOS,
    SMALL,
    TARGET_REL,
    BenchResult,
    Trial,
    run_bench,
)
from console.measure.session import MeasureSession


def print_bench(result: BenchResult) -> None:
    p = result.params
    t = p["sample_target"]
    for line in result.table():
        print(line)
    state = "restored" if result.restored else "NOT restored"
    print(
        f"  {p['runs']} run(s) per scenario; each run refits the model from its own sweep "
        f"(contexts {', '.join(map(str, p['sweep_contexts']))}; "
        f"{', '.join(p['sweep_text_types'])}; {p.get('sweep_passages', t['passages'])} "
        f"passages a point) and measures both sides again on the same {t['passages']} "
        f"passages, in rounds until every tok/s interval is "
        f"within ± {t['target_rel']:.0%} ({t['min_repeat']}-{t['max_repeat']} rounds), "
        f"{p['output_tokens']} tokens a request. Paths: {', '.join(p['paths'])} (typed-own: "
        f"{p.get('own_requests', 3)} requests a side on passages the sweep never read, "
        "settled where the answer offers it). True "
        f"effect = after / before pooled tok/s; 'not enough evidence' counts as right when it "
        f"is within {SMALL:.0%}."
    )
    cal = p.get("calibration")
    if cal:
        restarts = cal["restart_s"]
        print(f"  calibrated first: block-to-block shift sd {cal['shift_sd']:.1%} from "
              f"{len(cal['shifts'])} shift(s) ({len(restarts)} across a restart of "
              f"{statistics.median(restarts) if restarts else 0:.0f} s), widened for their "
              f"count to {cal.get('drift_sd', cal['shift_sd']):.1%}: every path carries it "
              "(typed figures, explain and the A-B orders)")  # fmt: skip
    parts = ", ".join(f"{k} {v:.0f} s" for k, v in result.timings.items())
    print(f"  original flags {state}; took {result.seconds:.0f} s ({parts})")


def _trial_line(trial: Trial) -> None:
    effect = "-" if trial.effect is None else f"{trial.effect:+.0%}"
    mark = "right" if trial.right else "WRONG"
    err(f"  run {trial.run + 1} {trial.scenario} [{trial.path}]: {trial.outcome} ({mark}; "
        f"true effect {effect}) {trial.headline}")  # fmt: skip


async def cmd_bench_verdict(args: argparse.Namespace) -> int:
    # A benchmark of the verdict, not of the engine: its sweeps stay out of history (where
    # they would become the latest sweep a later `diagnose` explains with) unless asked.
    args.no_store = not args.store

    def run(session: MeasureSession, tick) -> Any:
        return run_bench(
            session, scenarios=args.scenarios, runs=args.runs, output_tokens=args.output,
            target=SampleTarget(target_rel=args.target, min_repeat=MIN_ROUNDS,
                                max_repeat=args.max_rounds, passages=PASSAGES),
            seed=args.seed, timeout=args.timeout, tick=tick, paths=args.paths,
            on_trial=None if args.json else _trial_line, calibrate=not args.no_calibrate,
        )  # fmt: skip

    return await run_restoring(args, "verdict benchmark", run, print_bench)


def _scenarios(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown scenario {unknown[0] if unknown else text!r}; choose from "
            f"{', '.join(SCENARIOS)}"
        )
    return names


def _paths(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PATH_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown path {unknown[0] if unknown else text!r}; choose from {', '.join(PATH_NAMES)}"
        )
    return names


def add_bench_verdict(bench: argparse._SubParsersAction) -> None:
    """`specconsole bench verdict [HOST]` (registered by console.commands.bench)."""
    p = bench.add_parser(
        "verdict",
        help="How often the verdict is right, on scenarios whose cause is known.",
        description="Run scenarios whose true cause is known by construction on HOST's "
        f"engine ({', '.join(SCENARIOS)}) and report per scenario how often the verdict "
        "is right, and the false-alarm rate. Restarts the engine for the flag scenarios; "
        "it always ends on its original flags.",
    )
    p.add_argument("host", nargs="?", default="local", help="profile or host (default local)")
    p.add_argument("--runs", type=int, default=5, help="runs per scenario (default 5)")
    p.add_argument(
        "--scenarios", type=_scenarios, default=list(SCENARIOS),
        help=f"comma-separated, default all: {','.join(SCENARIOS)}",
    )  # fmt: skip
    p.add_argument(
        "--paths", type=_paths, default=list(PATH_NAMES),
        help=f"comma-separated operator paths, default all: {','.join(PATH_NAMES)}",
    )  # fmt: skip
    p.add_argument("--output", type=int, default=OUTPUT, help=f"output tokens (default {OUTPUT})")
    p.add_argument(
        "--no-calibrate", action="store_true",
        help="skip the host's calibration first (the paths then carry no measured drift)",
    )  # fmt: skip
    p.add_argument(
        "--target",
        type=float,
        default=TARGET_REL,
        help=f"rounds go on until every figure's tok/s interval is within this "
        f"(default {TARGET_REL})",
    )
    p.add_argument(
        "--max-rounds",
        type=int,
        default=MAX_ROUNDS,
        help=f"reads of each passage per figure at most (default {MAX_ROUNDS})",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for each restart")
    p.add_argument("--store", action="store_true", help="keep the sweeps in history")
    p.add_argument("--accept-new-host-key", action="store_true",
                   help="trust an unknown SSH host key without asking")  # fmt: skip
    p.add_argument("--json", action="store_true", help="machine-readable output only")
    p.add_argument("--save", metavar="FILE", help="also write the JSON to FILE")
    add_sampling_options(p, what="every scenario", seed_flag="--sampling-seed")
    p.set_defaults(func=cmd_bench_verdict)
