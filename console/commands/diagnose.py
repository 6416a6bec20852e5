"""`specconsole diagnose HOST`: explain a tok/s figure as context growth x text acceptance.

Typed ("it was 138, now it is 32": `--observed`, `--baseline`) or the live series' last
minute (no `--observed`). Every context the operator types is a prompt length in tokens;
the verdict converts it to the model's mid-decode context with the figure's output
length (`--output`, `--baseline-output`; the sweep's by default) and says which it
quotes. A prompt that does not fit the engine's context length is refused before
anything is swept. Typed figures carry this host's noise (`analysis/typed_noise.py`):
its calibration profile where one is stored, else the stored sweep's per-request spread.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from console.analysis.decompose import FitError, fit
from console.analysis.live_window import LiveWindow, explain_live, live_window
from console.analysis.repeat_rule import model_sweep_rule
from console.analysis.settle_plan import SettlePlan, TypedFigure
from console.analysis.verdict import Judgement, Sweep, typed_baseline, typed_verdict
from console.analysis.verdict_records import MIN_PROMPT, beyond_limit
from console.commands.base import HostCommand, common_options, err, measure_session, with_service
from console.experiments.settle import settle
from console.experiments.typed_noise_source import calibration_profile
from console.measure import methods
from console.measure.session import MeasureError, MeasureSession
from console.service import EngineService
from console.store import RunStore

SWEEP_OUTPUT = 64  # output tokens of the sweep diagnose runs when none is stored


def _typed(args: argparse.Namespace) -> list[tuple[float, int | None]]:
    """(prompt, output or None) of each typed figure."""
    out = []
    if args.observed is not None and args.context is not None:
        out.append((args.context, args.output))
    if args.baseline is not None and args.baseline_context is not None:
        out.append((args.baseline_context, args.baseline_output))
    return out


def _refuse_beyond(typed: list[tuple[float, int | None]], output: int, limit: int | None) -> None:
    for prompt, own in typed:
        refused = beyond_limit(prompt, own or output, limit)
        if refused:
            raise MeasureError(refused)


async def sweep_for(
    session: MeasureSession, args: argparse.Namespace, needed: list[str], reach: float
) -> tuple[Sweep, str]:
    """The sweep the verdict's model is fitted from: the newest stored sweep over at least
    two contexts with the flags in force and every needed text type (never a one-context
    baseline), or, when there is none, a new one covering `reach` and every typed prompt.
    A stored sweep that does not reach the context asked about is kept: the verdict then
    refuses to extrapolate and offers the sweep to run, rather than silently sweeping."""
    facts = await session.facts()
    host = session.service.profile.name
    store = session.store
    limit = facts.context_limit
    profile = await calibration_profile(store, host, facts.flags_hash)
    typed = _typed(args)
    if store is not None and not args.fresh:
        run = await store.latest_sweep(host, flags_hash=facts.flags_hash, text_types=needed)
        if run is not None:
            source = f"sweep run {run.id}"
            return Sweep(run.requests, host, limit, source, profile), source
    output = SWEEP_OUTPUT
    for prompt, own in typed:  # a prompt that follows the sweep's output must fit with it
        if own is None and limit is not None:
            output = max(16, min(output, int(limit - prompt)) // 8 * 8)
    _refuse_beyond(typed, output, limit)
    cap = (limit or 2048) - output
    top = int(min(cap, max(reach * 1.1, 512)))
    prompts = {round(p) for p, own in typed if own is None}
    contexts = sorted({64, max(65, top // 3), max(66, 2 * top // 3), top}
                      | {min(cap, max(MIN_PROMPT, p)) for p in prompts})  # fmt: skip
    err(f"  no stored sweep for these flags; sweeping prompts {contexts} ({output} tokens out) "
        f"on {', '.join(needed)}")  # fmt: skip
    result = await methods.context_sweep(
        session,
        contexts=contexts,
        output_tokens=output,
        text_types=needed,
        target=model_sweep_rule(None, None),
    )
    source = f"new sweep run {result.run_id}"
    return Sweep(tuple(result.samples), host, limit, source, profile), source


async def _facts(session: MeasureSession, args: argparse.Namespace, needed: list[str]) -> Any:
    """The engine's facts; for typed figures with the engine down and a sweep of the
    launch config's flags stored, the launch config's (a typed figure against a stored
    sweep needs no engine). Otherwise the engine's own sentence: it is not ready."""
    try:
        return await session.facts()
    except MeasureError:
        if args.observed is None or args.fresh or session.store is None:
            raise
        facts = await session.configured_facts()
        host = session.service.profile.name
        stored = await session.store.latest_sweep(host, flags_hash=facts.flags_hash,
                                                  text_types=needed)  # fmt: skip
        if stored is None:
            raise
    err("  the engine is down: the model comes from the stored sweep of the launch "
        "config's flags (the context limit is not checked)")  # fmt: skip
    return facts


async def cmd_diagnose(args: argparse.Namespace) -> int:
    async def body(service: EngineService) -> int:
        session = measure_session(service, args)
        if args.concurrency is not None:  # the load factor's question needs no context
            return await _load_question(session, args)
        live: LiveWindow | None = None
        if args.observed is None:
            live = await stored_live_window(session.store, service.profile.name, args.window)
        elif args.context is None:
            raise MeasureError("Pass --context (the prompt length, in tokens, of the figure).")
        if args.settle:
            return await run_settle(session, args)
        # With live figures the text is inferred unless given; these are only what the
        # sweep must cover.
        text = args.text or "prose"
        needed = sorted({text, args.baseline_text or text})
        facts = await _facts(session, args, needed)
        _refuse_beyond(_typed(args), 1, facts.context_limit)  # nothing fits: say so first
        reach = max(args.context or (live.context if live else 0), args.baseline_context or 0)
        sweep, source = await sweep_for(session, args, needed, reach)
        _refuse_beyond(_typed(args), sweep.output_tokens(), sweep.context_limit)
        judged = typed_or_live_verdict(sweep, args, live, text)
        print_verdict(judged, source, live, as_json=args.json, sweep=sweep)
        return 0

    return await with_service(args, body)


async def _load_question(session: MeasureSession, args: argparse.Namespace) -> int:
    """`--concurrency`: the typed pair read through the stored load run's load factor."""
    from console.experiments.load import typed_load_verdict

    if args.observed is None or args.baseline is None:
        raise MeasureError("--concurrency compares two typed figures: pass --observed and "
                           "--baseline (one stream's tok/s at each concurrency).")  # fmt: skip
    if session.store is None:
        raise MeasureError("The load factor comes from a stored load run; drop --no-store.")
    facts = await session.facts()
    verdict = await typed_load_verdict(
        session.store, session.service.profile.name, facts.flags_hash,
        observed=args.observed, at_n=args.concurrency, baseline=args.baseline,
        from_n=args.baseline_concurrency, observed_requests=args.observed_requests,
        baseline_requests=args.baseline_requests, sampling=session.sampling,
    )  # fmt: skip
    if args.json:
        print(json.dumps({"load_verdict": verdict.as_dict()}, indent=2))
    else:
        print("\n".join(verdict.lines()))
    return 0


def typed_or_live_verdict(
    sweep: Sweep, args: argparse.Namespace, live: LiveWindow | None, text: str
) -> Judgement:
    """The verdict `diagnose` prints, on the live window or on the typed figures."""
    if live is not None:
        base = typed_baseline(
            sweep, args.baseline, args.baseline_context, args.baseline_text,
            output=args.baseline_output, requests=args.baseline_requests,
        )  # fmt: skip
        # The same summary and verdict as the TUI's ctrl+l on the same samples.
        return explain_live(
            sweep, live, text_type=args.text, context=args.context, baseline=args.baseline,
            baseline_context=args.baseline_context, baseline_text=args.baseline_text,
            baseline_figure=base,
        ).verdict  # fmt: skip
    # The same function `bench verdict` scores on its typed path.
    return typed_verdict(
        sweep, args.observed, args.context, text, output=args.output,
        requests=args.observed_requests, baseline=args.baseline,
        baseline_prompt=args.baseline_context, baseline_text=args.baseline_text,
        baseline_output=args.baseline_output, baseline_requests=args.baseline_requests,
        held_out=args.passages != "sweep", same_prompts=args.passages == "same",
    )  # fmt: skip


def settle_plan(args: argparse.Namespace, host: str) -> SettlePlan:
    """The settling plan for the typed figures as the options give them."""
    text = args.text or "prose"
    output = args.output or SWEEP_OUTPUT
    observed = TypedFigure(args.observed, round(args.context), text, output,
                           args.observed_requests)  # fmt: skip
    baseline = None
    if args.baseline is not None:
        if args.baseline_context is None:
            raise MeasureError("--settle measures both points: pass --baseline-context too.")
        baseline = TypedFigure(args.baseline, round(args.baseline_context),
                               args.baseline_text or text, args.baseline_output or output,
                               args.baseline_requests)  # fmt: skip
        if baseline.point == observed.point:
            raise MeasureError(
                "Both figures are at one point, so measuring it now cannot say what changed "
                "since the baseline: send the baseline's own prompts again and read the pair "
                "with --passages same, or compare flags with `set --baseline`."
            )
    return SettlePlan(host, observed, baseline)


async def run_settle(session: MeasureSession, args: argparse.Namespace) -> int:
    """`diagnose --settle`: both typed points measured on the same passages, judged."""
    facts = await session.facts()
    plan = settle_plan(args, session.service.profile.name)
    for prompt in plan.prompts:
        session.check_fits(facts, prompt, plan.output)
    profile = await calibration_profile(session.store, plan.host, facts.flags_hash)
    kinds = ", ".join(plan.text_types)
    err(f"  settling: prompts {list(plan.prompts)} x {kinds} on {plan.passages} passages, "
        f"{plan.reads} reads each ({plan.requests()} requests)")  # fmt: skip
    settled = await settle(session, plan, profile=profile, limit=facts.context_limit)
    if args.json:
        print(json.dumps(settled.as_dict(), indent=2))
    else:
        print(settled.text())
    return 0


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


def register(host_command: HostCommand) -> None:
    p = host_command("diagnose", "Explain a tok/s figure as context growth x text acceptance.")
    p.add_argument("--observed", type=float, help="the tok/s to explain (default: live series)")
    p.add_argument("--context", type=float,
                   help="prompt length (tokens) it was observed at; the verdict reads it "
                        "mid-decode, prompt + half the output")  # fmt: skip
    p.add_argument(
        "--output", type=int, help="output tokens of the observed figure (default: the sweep's)"
    )
    p.add_argument(
        "--observed-requests",
        type=int,
        default=1,
        metavar="N",
        help="the observed figure is the median of N requests (default 1)",
    )
    p.add_argument("--text", help="text type it was observed on (default prose, or inferred)")
    p.add_argument("--baseline", type=float, help="the earlier tok/s it is compared with")
    p.add_argument(
        "--baseline-context",
        type=float,
        help="prompt length of the baseline (default: the shortest swept)",
    )
    p.add_argument(
        "--baseline-output", type=int, help="output tokens of the baseline (default: the sweep's)"
    )
    p.add_argument(
        "--baseline-requests",
        type=int,
        default=1,
        metavar="N",
        help="the baseline is the median of N requests (default 1)",
    )
    p.add_argument("--baseline-text", help="text type of the baseline (default: --text)")
    p.add_argument(
        "--concurrency", type=int, metavar="N",
        help="the observed figure is one stream's tok/s among N at once: read the pair "
        "through the stored load run's load factor (`specconsole load`)",
    )  # fmt: skip
    p.add_argument(
        "--baseline-concurrency", type=int, default=1, metavar="N",
        help="streams at once when the baseline was read (default 1: alone)",
    )  # fmt: skip
    p.add_argument("--window", type=float, default=60.0, help="seconds of live series to use")
    p.add_argument("--fresh", action="store_true", help="sweep again even if a stored sweep fits")
    p.add_argument(
        "--passages", choices=("own", "same", "sweep"), default="own",
        help="what the typed figures were measured on: your own prompts (default: the "
        "spread between passages is in every interval), the same prompts of your own "
        "re-sent for both figures at one point (paired: the spread cancels), or the "
        "sweep's own passages",
    )  # fmt: skip
    p.add_argument(
        "--settle", action="store_true",
        help="measure both typed points on the same passages and judge them (the "
        "measurement a verdict left open by the passage spread offers)",
    )  # fmt: skip
    common_options(p, repeat=2)
    p.set_defaults(func=cmd_diagnose)
