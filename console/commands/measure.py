"""`specconsole prompt | sweep | twopoint | streamcheck | diagnose | bench fidelity`.

Thin over the measurement core (console/measure): each command opens the host's
service, runs one method in a `MeasureSession` that records the run in the history
store, and prints either a table (with a progress bar on a terminal) or `--json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from typing import Any

from console.analysis import format as fmt
from console.analysis.decompose import ThroughputModel
from console.analysis.records import RequestSample
from console.analysis.repeat_rule import model_sweep_rule, repeat_rule
from console.analysis.round_curve import sample_curve
from console.analysis.sample_size import MAX_REPEAT, PAIRED_MAX_REPEAT, TARGET_REL, SampleTarget
from console.analysis.stats import PointSummary, Spread, spread
from console.commands import diagnose, twopoint
from console.commands.base import (
    HostCommand,
    common_options,
    emit_json,
    footer,
    ints,
    measure_session,
    names,
    progress,
    with_service,
)
from console.errors import ConsoleError
from console.measure import methods
from console.measure.methods import MethodResult
from console.measure.session import MeasureSession
from console.service import EngineService

# Kept importable from here, where they lived before diagnose had its own module.
print_verdict = diagnose.print_verdict
stored_live_window = diagnose.stored_live_window


# -- printing -----------------------------------------------------------------------------


def print_points(points: list[PointSummary]) -> None:
    """Each point's pooled figures with their 95% intervals (tok/s = commit / step on every
    row), and the per-request tok/s median and range beside them."""
    rows = []
    for p in points:
        f = p.pooled
        rows.append(
            (
                p.text_type, str(p.context), str(p.max_tokens), str(p.n),
                fmt.interval(f.tok_s if f else None, fmt.TOK_S),
                fmt.interval(f.commit if f else None, fmt.COMMIT),
                fmt.interval(f.step_s if f else None, fmt.STEP_MS),
                fmt.spread(p.tok_s, fmt.TOK_S), ",".join(p.sources), str(p.flagged or ""),
            )
        )  # fmt: skip
    headers = ("text", "context", "out", "n", "decode tok/s", "commit", "step ms",
               "per request tok/s", "source", "flagged")  # fmt: skip
    print(fmt.table(headers, rows, right={1, 2, 3}))
    print(
        "  (tok/s, commit, step: pooled over the point's requests (tokens / steps / decode "
        "time), [95% bootstrap interval]; per request: median [lowest-highest]; flagged "
        "requests are not in the figures)"
    )


def sweep_target(args: argparse.Namespace) -> SampleTarget:
    """A context sweep's repeat rule: `sample_target`'s, reading `MODEL_PASSAGES`
    passages a point where it repeats to a target (the model's passage spread)."""
    return model_sweep_rule(args.repeat, args.target_rel, args.max_repeat)


def sample_target(args: argparse.Namespace, *, default_min: int = 3) -> SampleTarget:
    """The repeat rule the options ask for: `--target-rel` repeats until each point's
    tok/s interval is that narrow (at least `--repeat`, at most `--max-repeat`); an
    explicit `--repeat` alone, or `--target-rel 0`, is exactly that many; neither is the
    default target."""
    return repeat_rule(args.repeat, args.target_rel, args.max_repeat, default_min=default_min)


def add_sample_options(p: argparse.ArgumentParser) -> None:
    """`--target-rel` and `--max-repeat`: repeat until the intervals are narrow enough."""
    p.add_argument(
        "--target-rel", type=float, metavar="FRACTION",
        help=f"repeat each point until its tok/s interval is within this fraction of the "
        f"value (default {TARGET_REL} when --repeat is not given; 0 = exactly --repeat)",
    )  # fmt: skip
    p.add_argument(
        "--max-repeat", type=int, metavar="N",
        help=f"at most this many repeats per point (default {MAX_REPEAT}; side by side, "
        f"{PAIRED_MAX_REPEAT} while the paired change is still wide)",
    )  # fmt: skip


def print_sample_size(result: MethodResult) -> None:
    message = (result.figures.get("sample_size") or {}).get("message")
    if message:
        print(message)


def print_sample(s: RequestSample, *, show_text: bool = True) -> None:
    ttft = s.ttft_s if s.ttft_s is not None else s.server_ttft_s
    print(
        f"decode {fmt.tok_s(s.decode_tok_s)} tok/s ({s.decode_source or 'no decode time'}, "
        f"{'streamed' if s.streamed else 'not streamed'}), commit {fmt.commit(s.commit_len)}, "
        f"step {fmt.step_ms(s.step_time_s)} ms, TTFT {fmt.ttft_ms(ttft)} ms"
        f"{'' if s.ttft_s is not None or s.server_ttft_s is None else ' (server)'}"
    )
    print(f"  measured: {s.provenance}")
    print(
        f"  context {s.context_tokens} tokens, {s.completion_tokens}/{s.max_tokens} tokens out "
        f"({s.finish_reason}), {s.text_type} text, latency {s.latency_s:.3f} s, "
        f"flags {s.flags_hash}, {s.sampling_text}"
    )
    if s.repetition is not None and s.repetition > 0.5:
        print(f"  note: {s.repetition:.0%} of the output repeats itself; commit is inflated")
    if s.flagged:
        print(f"  FLAGGED (kept out of averages): {s.flagged}")
    if show_text and s.text:
        print_sample_text(s)


def print_sample_text(s: RequestSample) -> None:
    print("  --- output ---")
    print("  " + s.text.replace("\n", "\n  "))


# -- commands -----------------------------------------------------------------------------


async def cmd_prompt(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = measure_session(service, args)
        with progress(args, "prompt") as tick:
            result = await methods.probe(
                session, text_type=args.text_type, context=args.context, text=args.text,
                max_tokens=args.max_tokens, ignore_eos=args.ignore_eos, stream=args.stream,
                repeat=args.repeat, tick=tick, first_passage=args.first_passage,
            )  # fmt: skip
        curves = [sample_curve(s) for s in result.samples]
        if args.json:
            emit_json(result, {"round_curves": [c.as_dict() if c else None for c in curves]})
            return 0
        for i, sample in enumerate(result.samples):
            print_sample(sample, show_text=False)
            if curves[i] is not None:
                print(f"  {curves[i].summary()}")
            if i == len(result.samples) - 1 and sample.text:
                print_sample_text(sample)
        if len(result.samples) > 1:
            print_points(result.points)
        print(f"sampling: {result.sampling_label}")
        footer(result)
        return 0

    return await with_service(args, body)


async def cmd_sweep(args: argparse.Namespace) -> int:
    types = args.text or ["code"]
    target = sweep_target(args) if not args.outputs else None

    async def body(service: EngineService) -> int:
        session = measure_session(service, args)
        with progress(args, "sweep") as tick:
            if args.outputs:
                result = await methods.output_sweep(
                    session, outputs=args.outputs, context=args.context or 256,
                    text_types=types, repeat=args.repeat or 1, tick=tick,
                )  # fmt: skip
            else:
                result = await methods.context_sweep(
                    session, contexts=args.contexts, output_tokens=args.output,
                    text_types=types, repeat=args.repeat or 1, stream=args.stream, tick=tick,
                    target=target,
                )  # fmt: skip
        if args.json:
            emit_json(result)
            return 0
        print_points(result.points)
        print(f"sampling: {result.sampling_label}")
        print_sample_size(result)
        if result.model is not None:
            print_model(result.model)
        elif result.figures.get("fit_error"):
            print(f"no model: {result.figures['fit_error']}")
        footer(result)
        return 0

    return await with_service(args, body)


def print_model(model: ThroughputModel) -> None:
    for line in model.describe():
        print(line)


# -- bench fidelity -----------------------------------------------------------------------


NO_ROUND_TIMING = (
    "bench fidelity compares the console's decode tok/s with the engine's own per-round step "
    "times, which only the builtin engine reports ({engine} reports none); "
    "`--watch-overhead` (tok/s with the live series running against without) works on "
    "every engine."
)


async def _fidelity_ratio(session: MeasureSession, args: argparse.Namespace) -> dict[str, Any]:
    """Console decode tok/s over the engine's per-round rate, request by request."""
    result = await methods.probe(
        session, text_type=args.text_type, context=args.context, max_tokens=args.max_tokens,
        repeat=args.requests,
    )  # fmt: skip
    ratios = []
    for s in result.samples:
        if s.ok and s.rounds and s.decode_tok_s:
            engine_rate = (s.completion_tokens - 1) / sum(r[1] for r in s.rounds)
            ratios.append(s.decode_tok_s / engine_rate)
    fidelity = spread(ratios)
    return {
        "requests": len(result.samples),
        "fidelity_ratio": fidelity.as_dict() if fidelity else None,
        "what": "console decode tok/s / engine per-round tok/s ((N-1) / sum of round step times)",
    }


async def cmd_bench_fidelity(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        rounds = service.backend.reports_round_stats
        if not rounds and not args.watch_overhead:
            raise ConsoleError(NO_ROUND_TIMING.format(engine=service.profile.engine))
        session = measure_session(service, args)
        if rounds:
            out = await _fidelity_ratio(session, args)
        else:  # --watch-overhead alone: the engine has no per-round timing to compare with
            note = NO_ROUND_TIMING.format(engine=service.profile.engine).split("; ")[0]
            out = {"requests": 0, "fidelity_ratio": None, "what": f"no ratio: {note}"}
        if args.watch_overhead:
            out["watch_overhead"] = await _watch_overhead(session, args)
        if args.json:
            print(json.dumps(out, indent=2))
            return 0
        fidelity = out["fidelity_ratio"]
        if fidelity:
            print(
                f"fidelity: console / engine per-round decode tok/s = {fidelity['median']:.4f} "
                f"(median of {fidelity['n']}; range {fidelity['low']:.4f}-{fidelity['high']:.4f})"
            )
        else:
            print(out["what"])
        w = out.get("watch_overhead")
        if w:
            sp = w["ratio_spread"]
            print(
                f"watch overhead: tok/s with watch running / without = {w['ratio']:.4f} "
                f"(median of {w['pairs']} paired requests; "
                f"range {sp['low']:.4f}-{sp['high']:.4f}; scrape every "
                f"{w['scrape_interval']} s and the log followed)"
            )
        return 0

    return await with_service(args, body)


async def _watch_overhead(session: MeasureSession, args: argparse.Namespace) -> dict[str, Any]:
    """tok/s with a live series running against without, request by request.

    A 2-core host drifts by more than the effect being measured, so every pair sends the
    same prompt twice, once with the series following the log and scraping /metrics and
    once without, next to each other (alternating which goes first); the figure is the
    median of the per-pair ratios, with their spread."""
    from console.measure.live import LiveSeries

    ratios: list[float] = []
    rates: dict[bool, list[float]] = {True: [], False: []}
    requests: list[dict[str, Any]] = []  # each request's figures (checked against /metrics)
    for pair in range(args.blocks * args.requests):
        spec = await session.spec(args.text_type, args.context, args.max_tokens, index=pair % 7)
        taken: dict[bool, float] = {}
        for with_watch in (pair % 2 == 1, pair % 2 == 0):
            task = None
            if with_watch:
                series = LiveSeries(session.service, scrape_interval=args.scrape_interval)
                task = asyncio.create_task(series.run())
                await asyncio.sleep(0.3)  # following and scraping have started
            try:
                sample = await session.measure(spec)
            finally:
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if sample.ok and sample.decode_tok_s:
                taken[with_watch] = sample.decode_tok_s
                rates[with_watch].append(sample.decode_tok_s)
            requests.append({
                "with_watch": with_watch, "ok": sample.ok, "decode_tok_s": sample.decode_tok_s,
                "completion_tokens": sample.completion_tokens,
                "decode_time_s": sample.decode_time_s, "verify_steps": sample.verify_steps,
            })  # fmt: skip
        if len(taken) == 2:
            ratios.append(taken[True] / taken[False])
    ratio = spread(ratios)
    return {
        "ratio": ratio.median if ratio else None,
        "ratio_spread": ratio.as_dict() if ratio else None,
        "pairs": len(ratios),
        "scrape_interval": args.scrape_interval,
        "with_watch": (spread(rates[True]) or Spread(0, 0, 0, 0)).as_dict(),
        "without": (spread(rates[False]) or Spread(0, 0, 0, 0)).as_dict(),
        "requests": requests,
    }


# -- parser -------------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add the measurement commands to the `specconsole` parser."""
    _register_prompt(host_command)
    _register_methods(host_command)
    twopoint.register(host_command)
    diagnose.register(host_command)


def _register_prompt(host_command: HostCommand) -> None:
    p = host_command("prompt", "Fire one test prompt and show its figures and provenance.")
    p.add_argument(
        "text", nargs="?", help="the prompt; without it, --context tokens of --text-type"
    )
    p.add_argument(
        "--text-type", default="code", help="library text type (code, prose, repetitive)"
    )
    p.add_argument("--context", type=int, help="prompt length in tokens (library text)")
    p.add_argument("--max-tokens", type=int, default=128)
    # On by default, as in the TUI's prompt lab and `methods.probe`: a request that stops
    # early at EOS is not the length asked, so its figures are flagged.
    p.add_argument("--ignore-eos", action=argparse.BooleanOptionalAction, default=True,
                   help="always produce --max-tokens tokens (default; --no-ignore-eos "
                        "lets the model stop at EOS)")  # fmt: skip
    p.add_argument("--stream", action="store_true", help="stream the response (client timing too)")
    p.add_argument(
        "--first-passage", type=int, default=0, metavar="N",
        help="the library window the first repeat reads (default 0; a sweep reads windows "
        "0-5, so 20 reads passages no sweep read)",
    )  # fmt: skip
    common_options(p, repeat=1)
    p.set_defaults(func=cmd_prompt)


def _register_methods(host_command: HostCommand) -> None:
    """The measurement methods: sweeps, two-point, stream check."""
    p = host_command("sweep", "Context sweep (fixed output) or output sweep (fixed context).")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--contexts", type=ints, help="prompt lengths in tokens, e.g. 64,1k,3k,5k")
    which.add_argument("--outputs", type=ints, help="output lengths, e.g. 64,256,1024")
    p.add_argument(
        "--output", type=int, default=128, help="output tokens per request (context sweep)"
    )
    p.add_argument("--context", type=int, help="prompt length for an output sweep (default 256)")
    p.add_argument("--text", type=names, help="text types, e.g. code,prose (default code)")
    p.add_argument("--stream", action="store_true")
    common_options(p, repeat=None)
    add_sample_options(p)
    p.set_defaults(func=cmd_sweep)


def add_bench_fidelity(bench: argparse._SubParsersAction) -> None:
    """`specconsole bench fidelity HOST` (registered by console.commands.bench)."""
    p = bench.add_parser(
        "fidelity", help="Console decode tok/s against the engine's own per-round timing."
    )
    p.add_argument("host")
    p.add_argument("--accept-new-host-key", action="store_true")
    p.add_argument("--requests", type=int, default=10)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--text-type", default="code")
    p.add_argument("--watch-overhead", action="store_true", help="also measure watch's overhead")
    p.add_argument(
        "--blocks", type=int, default=4, help="watch overhead: --blocks x --requests pairs"
    )
    p.add_argument("--scrape-interval", type=float, default=2.0)
    p.add_argument("--no-store", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_fidelity)
