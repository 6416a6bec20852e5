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
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from console.analysis import format as fmt
from console.analysis.decompose import FitError, ThroughputModel, fit
from console.analysis.live_window import LiveWindow, explain_live, live_window
from console.analysis.records import RequestSample
from console.analysis.round_curve import sample_curve
from console.analysis.sample_size import MAX_REPEAT, TARGET_REL, SampleTarget
from console.analysis.stats import PointSummary, Spread, spread
from console.analysis.verdict import Judgement, Observed, Sweep, judge, typed_baseline
from console.commands.base import HostCommand, err, with_service
from console.commands.web import bench_parser
from console.errors import ConsoleError
from console.measure import methods
from console.measure.methods import MethodResult
from console.measure.prompts import PromptLibrary
from console.measure.session import MeasureError, MeasureSession
from console.numbers import NumberListError, parse_counts
from console.service import EngineService
from console.store import RunStore


def _ints(text: str) -> list[int]:
    """An option's "64,512,1k": the parser the TUI's fields use too."""
    try:
        return parse_counts(text, "Each value")
    except NumberListError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


# -- sessions and progress ----------------------------------------------------------------


def _session(service: EngineService, args: argparse.Namespace) -> MeasureSession:
    library = PromptLibrary.builtin()
    if getattr(args, "prompts", None):
        library.extend_from_file(args.prompts)
    store = None if getattr(args, "no_store", False) else RunStore.default()
    return MeasureSession(service, store=store, library=library, on_note=lambda t: err(f"  {t}"))


@contextmanager
def _progress(args: argparse.Namespace, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on a terminal; nothing with --json or off a terminal."""
    if getattr(args, "json", False) or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task(label, total=None)

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield tick


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


def sample_target(args: argparse.Namespace, *, default_min: int = 3) -> SampleTarget:
    """The repeat rule the options ask for: `--target-rel` repeats until each point's
    tok/s interval is that narrow (at least `--repeat`, at most `--max-repeat`); an
    explicit `--repeat` alone, or `--target-rel 0`, is exactly that many; neither is the
    default target."""
    rel, repeat = args.target_rel, args.repeat
    least = repeat if repeat is not None else default_min
    if least < 1:
        raise ConsoleError(f"--repeat must be at least 1, not {least}.")
    if rel == 0 or (rel is None and repeat is not None):
        return SampleTarget.fixed(least)
    try:
        return SampleTarget(
            target_rel=TARGET_REL if rel is None else rel,
            max_repeat=max(args.max_repeat, least),
            min_repeat=least,
        )
    except ValueError as exc:
        raise ConsoleError(str(exc)) from None


def add_sample_options(p: argparse.ArgumentParser) -> None:
    """`--target-rel` and `--max-repeat`: repeat until the intervals are narrow enough."""
    p.add_argument(
        "--target-rel", type=float, metavar="FRACTION",
        help=f"repeat each point until its tok/s interval is within this fraction of the "
        f"value (default {TARGET_REL} when --repeat is not given; 0 = exactly --repeat)",
    )  # fmt: skip
    p.add_argument(
        "--max-repeat", type=int, default=MAX_REPEAT,
        help=f"at most this many repeats per point (default {MAX_REPEAT})",
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
        f"flags {s.flags_hash}"
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


def _emit_json(result: MethodResult, extra: dict[str, Any] | None = None) -> None:
    data = result.as_dict()
    if extra:
        data.update(extra)
    print(json.dumps(data, indent=2, default=str))


def _footer(result: MethodResult) -> None:
    if result.run_id is not None:
        print(f"(stored as run {result.run_id}; `specconsole history show {result.run_id}`)")


# -- commands -----------------------------------------------------------------------------


async def cmd_prompt(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = _session(service, args)
        with _progress(args, "prompt") as tick:
            result = await methods.probe(
                session, text_type=args.text_type, context=args.context, text=args.text,
                max_tokens=args.max_tokens, ignore_eos=args.ignore_eos, stream=args.stream,
                repeat=args.repeat, tick=tick,
            )  # fmt: skip
        curves = [sample_curve(s) for s in result.samples]
        if args.json:
            _emit_json(result, {"round_curves": [c.as_dict() if c else None for c in curves]})
            return 0
        for i, sample in enumerate(result.samples):
            print_sample(sample, show_text=False)
            if curves[i] is not None:
                print(f"  {curves[i].summary()}")
            if i == len(result.samples) - 1 and sample.text:
                print_sample_text(sample)
        if len(result.samples) > 1:
            print_points(result.points)
        _footer(result)
        return 0

    return await with_service(args, body)


async def cmd_sweep(args: argparse.Namespace) -> int:
    types = args.text or ["code"]
    target = sample_target(args) if not args.outputs else None

    async def body(service: EngineService) -> int:
        session = _session(service, args)
        with _progress(args, "sweep") as tick:
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
            _emit_json(result)
            return 0
        print_points(result.points)
        print_sample_size(result)
        if result.model is not None:
            print_model(result.model)
        elif result.figures.get("fit_error"):
            print(f"no model: {result.figures['fit_error']}")
        _footer(result)
        return 0

    return await with_service(args, body)


def print_model(model: ThroughputModel) -> None:
    for line in model.describe():
        print(line)


async def cmd_twopoint(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = _session(service, args)
        with _progress(args, "two-point") as tick:
            result = await methods.two_point(
                session, n1=args.n1, n2=args.n2, context=args.context, text_type=args.text_type,
                repeat=args.repeat, tick=tick,
            )  # fmt: skip
        if args.json:
            _emit_json(result)
            return 0
        f = result.figures
        if f.get("twopoint_tok_s") is None:
            print(f"two-point: no result ({f.get('error', 'T(N2) was not above T(N1)')})")
            return 1
        print(
            f"two-point decode: {f['twopoint_tok_s']:.1f} tok/s = ({args.n2} - {args.n1}) tokens / "
            f"(T({args.n2}) - T({args.n1})), medians of {f['pairs']} pairs, client wall time"
        )
        if f.get("server_tok_s"):
            print(
                f"server decode time, same tokens: {f['server_tok_s']:.1f} tok/s "
                f"({f['agreement']:+.1%})"
            )
        if f.get("whole_request_tok_s"):
            w = f["whole_request_tok_s"]
            print(f"whole-request decode (N={args.n2}, server): {w['median']:.1f} tok/s")
        _footer(result)
        return 0

    return await with_service(args, body)


async def cmd_streamcheck(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = _session(service, args)
        with _progress(args, "stream check") as tick:
            result = await methods.stream_check(
                session, context=args.context, max_tokens=args.max_tokens,
                text_type=args.text_type, repeat=args.repeat, tick=tick,
            )  # fmt: skip
        if args.json:
            _emit_json(result)
            return 0
        f = result.figures
        for label, key in (
            ("streamed, client-side", "stream_client_tok_s"),
            ("streamed, engine's figure", "stream_server_tok_s"),
            ("not streamed, engine's figure", "plain_tok_s"),
        ):
            if f.get(key):
                print(f"{label:<32}{f[key]['median']:.1f} tok/s")
        print(f.get("verdict", "no verdict: the streamed or the plain requests gave no figure"))
        _footer(result)
        return 2 if f.get("distorted") else 0

    return await with_service(args, body)


# -- diagnose -----------------------------------------------------------------------------


async def _sweep_for(
    session: MeasureSession, args: argparse.Namespace, needed: list[str], reach: float
) -> tuple[Sweep, str]:
    """The sweep the verdict's model is fitted from: the newest stored sweep over at least
    two contexts with the flags in force and every needed text type (never a one-context
    baseline), or, when there is none, a new one covering `reach`. A stored sweep that does not
    reach the context asked about is kept: the verdict then refuses to extrapolate and
    offers the sweep to run, rather than silently sweeping for minutes."""
    facts = await session.facts()
    host = session.service.profile.name
    store = session.store
    if store is not None and not args.fresh:
        run = await store.latest_sweep(host, flags_hash=facts.flags_hash, text_types=needed)
        if run is not None:
            return Sweep(run.requests, host, facts.context_limit), f"sweep run {run.id}"
    limit = facts.context_limit or 2048
    output = 64
    top = int(min(limit - output, max(reach * 1.1, 512)))
    contexts = sorted({64, max(65, top // 3), max(66, 2 * top // 3), top})
    err(f"  no stored sweep for these flags; sweeping contexts {contexts} on {', '.join(needed)}")
    result = await methods.context_sweep(
        session, contexts=contexts, output_tokens=output, text_types=needed, repeat=3
    )
    return Sweep(tuple(result.samples), host, facts.context_limit), f"new sweep run {result.run_id}"


async def cmd_diagnose(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = _session(service, args)
        live: LiveWindow | None = None
        if args.observed is None:
            live = await stored_live_window(session.store, service.profile.name, args.window)
        context = args.context if args.context is not None else live and live.context
        if context is None:
            raise MeasureError("Pass --context (the context the figure was observed at).")
        # With live figures the text is inferred unless given; these are only what the
        # sweep must cover.
        text = args.text or "prose"
        needed = sorted({text, args.baseline_text or text})
        reach = max(context, args.baseline_context or 0)
        sweep, source = await _sweep_for(session, args, needed, reach)
        if live is not None:
            # The same summary and verdict as the TUI's ctrl+l on the same samples.
            judged = explain_live(
                sweep, live, text_type=args.text, context=args.context,
                baseline=args.baseline, baseline_context=args.baseline_context,
                baseline_text=args.baseline_text,
            ).verdict  # fmt: skip
        else:
            observed = Observed.typed(args.observed, context, text)
            base = typed_baseline(sweep, args.baseline, args.baseline_context, args.baseline_text)
            judged = judge(sweep, observed, base)
        print_verdict(judged, source, live, as_json=args.json, sweep=sweep)
        return 0

    return await with_service(args, body)


def print_verdict(
    judged: Judgement,
    source: str,
    live: LiveWindow | None = None,
    *,
    as_json: bool = False,
    sweep: Sweep | None = None,
) -> None:
    """A verdict as `diagnose` prints it, or its JSON (with the fitted model, as before)."""
    if as_json:
        out: dict[str, Any] = {"verdict": judged.as_dict(), "model_from": source}
        try:
            out["model"] = fit(sweep.samples).as_dict() if sweep is not None else None
        except FitError:
            out["model"] = None
        if live is not None:
            out["live"] = live.as_dict()
        print(json.dumps(out, indent=2))
        return
    if live is not None:
        kind = judged.text_type or "none of the swept types"
        print(live.text(kind + (" (uncertain)" if "uncertain" in judged.text() else "")))
    print(judged.text())
    print(f"(model from {source})")


async def stored_live_window(store: RunStore | None, host: str, window_s: float) -> LiveWindow:
    """The live window `diagnose` explains: the samples `watch` stored for `host` in the
    last `window_s` seconds, summarised as the TUI summarises its own."""
    now = time.time()
    samples = await store.live_since(host, now - window_s) if store is not None else []
    window = live_window(samples, window_s=window_s, now=now)
    if window is None and samples:
        raise MeasureError(
            f"The {len(samples)} live samples for {host} in the last {window_s:.0f} s lack a "
            "figure a verdict needs (tok/s, commit, step time and context together); watch "
            "it while it decodes, or pass --observed."
        )
    if window is None:
        raise MeasureError(
            f"No live samples for {host} in the last {window_s:.0f} s; run `specconsole "
            f"watch {host}` while it serves traffic, or pass --observed."
        )
    return window


# -- bench fidelity -----------------------------------------------------------------------


async def cmd_bench_fidelity(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        if not service.backend.reports_round_stats:
            raise ConsoleError(
                "bench fidelity needs per-round timing from the engine, which only the builtin "
                "engine reports; run it against a builtin host."
            )
        session = _session(service, args)
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
        out: dict[str, Any] = {
            "requests": len(result.samples),
            "fidelity_ratio": fidelity.as_dict() if fidelity else None,
            "what": (
                "console decode tok/s / engine per-round tok/s ((N-1) / sum of round step times)"
            ),
        }
        if args.watch_overhead:
            out["watch_overhead"] = await _watch_overhead(session, args)
        if args.json:
            print(json.dumps(out, indent=2))
            return 0
        if fidelity:
            print(
                f"fidelity: console / engine per-round decode tok/s = {fidelity.median:.4f} "
                f"(median of {fidelity.n}; range {fidelity.low:.4f}-{fidelity.high:.4f})"
            )
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
    }


# -- parser -------------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    """Add the measurement commands to the `specconsole` parser."""
    _register_prompt(host_command)
    _register_methods(host_command)
    _register_diagnose(host_command)
    _register_fidelity(sub)


def _common(p: argparse.ArgumentParser, *, repeat: int | None) -> None:
    """The options every measuring command takes."""
    p.add_argument(
        "--repeat", type=int, default=repeat,
        help="repeats per point" + (" (default: until --target-rel)" if repeat is None else ""),
    )  # fmt: skip
    p.add_argument("--prompts", metavar="FILE", help="extra texts: a .txt (one type) or .jsonl")
    p.add_argument("--no-store", action="store_true", help="do not record the run in history")
    p.add_argument("--json", action="store_true", help="machine-readable output only")


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
    _common(p, repeat=1)
    p.set_defaults(func=cmd_prompt)


def _register_methods(host_command: HostCommand) -> None:
    """The measurement methods: sweeps, two-point, stream check."""
    p = host_command("sweep", "Context sweep (fixed output) or output sweep (fixed context).")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--contexts", type=_ints, help="prompt lengths in tokens, e.g. 64,1k,3k,5k")
    which.add_argument("--outputs", type=_ints, help="output lengths, e.g. 64,256,1024")
    p.add_argument(
        "--output", type=int, default=128, help="output tokens per request (context sweep)"
    )
    p.add_argument("--context", type=int, help="prompt length for an output sweep (default 256)")
    p.add_argument("--text", type=_names, help="text types, e.g. code,prose (default code)")
    p.add_argument("--stream", action="store_true")
    _common(p, repeat=None)
    add_sample_options(p)
    p.set_defaults(func=cmd_sweep)

    p = host_command("twopoint", "Decode rate as (N2-N1)/(T(N2)-T(N1)): prefill and RTT cancel.")
    p.add_argument("--n1", type=int, default=32)
    p.add_argument("--n2", type=int, default=160)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--text-type", default="code")
    _common(p, repeat=3)
    p.set_defaults(func=cmd_twopoint)

    p = host_command("streamcheck", "Does streaming over this link distort decode figures?")
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--text-type", default="code")
    _common(p, repeat=3)
    p.set_defaults(func=cmd_streamcheck)


def _register_diagnose(host_command: HostCommand) -> None:
    p = host_command("diagnose", "Explain a tok/s figure as context growth x text acceptance.")
    p.add_argument("--observed", type=float, help="the tok/s to explain (default: live series)")
    p.add_argument("--context", type=float, help="context (tokens) it was observed at")
    p.add_argument("--text", help="text type it was observed on (default prose, or inferred)")
    p.add_argument("--baseline", type=float, help="the earlier tok/s it is compared with")
    p.add_argument(
        "--baseline-context", type=float, help="context of the baseline (default: shortest swept)"
    )
    p.add_argument("--baseline-text", help="text type of the baseline (default: --text)")
    p.add_argument("--window", type=float, default=60.0, help="seconds of live series to use")
    p.add_argument("--fresh", action="store_true", help="sweep again even if a stored sweep fits")
    _common(p, repeat=2)
    p.set_defaults(func=cmd_diagnose)


def _register_fidelity(sub: argparse._SubParsersAction) -> None:
    bench = bench_parser(sub)
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
