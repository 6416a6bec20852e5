"""Each main view with fixed data, ready to snapshot at any terminal size.

Shared by the layout snapshots (test_layouts.py) and by hand checks: `scenario(name)`
gives a fresh app and the `run_before` that brings it to the view with its content.
Nothing here depends on the clock, a pid or a temp path (tests/console/tui/fakes.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from textual.pilot import Pilot

from console.analysis.records import RunInfo
from console.service import LifecycleEvent
from console.tui.app import SpecConsoleApp
from console.tui.messages import PromptRan
from console.tui.settings import TuiSettings
from tests.console.tui import fakes

RunBefore = Callable[[Pilot], Awaitable[None]]
VIEWS = ("service", "logs", "flags", "prompt", "sweeps", "history", "keys")
SIZES = ((80, 24), (100, 30), (160, 48))

LOG_LINES = [
    f"[2026-01-01 12:00:{i:02d}] Decode batch, #running-req: 1, #token: {300 + 40 * i}, "
    f"accept len: 3.{i % 10}, gen throughput (token/s): {100 + i}.0"
    if i % 3
    else f"[2026-01-01 12:00:{i:02d}] INFO 127.0.0.1 GET /health HTTP/1.1 200"
    for i in range(40)
]


def app_for(service: fakes.FakeService) -> SpecConsoleApp:
    return SpecConsoleApp(
        "gpu1", settings=TuiSettings(theme="dark"), service=service, poll=False, live=False,  # type: ignore[arg-type]
    )  # fmt: skip


async def ready(pilot: Pilot, service: fakes.FakeService) -> None:
    app = pilot.app
    app.status = await service.status()
    app.server_info = await service.server_info()
    await pilot.pause()
    await app.workers.wait_for_complete()


async def settle(pilot: Pilot) -> None:
    await pilot.pause()
    # The log view follows its stream for ever: wait for the one-shot workers only.
    for worker in list(pilot.app.workers):
        if worker.group not in ("log-follow",):
            await worker.wait()
    await pilot.pause(0.3)


def fill_history() -> None:
    """Two stored context sweeps of one host, the second with a smaller draft window."""
    asyncio.run(store_history())


async def store_history() -> None:
    """`fill_history` from inside a running loop (an async test)."""
    from console.store import RunStore

    store = RunStore.default()
    for i, (flags, scale) in enumerate(
        (({"port": 30000}, 1.0), ({"port": 30000, "speculative-draft-window-size": 256}, 0.8))
    ):
        info = RunInfo(host="gpu1", engine="builtin", method="context-sweep",
                       params={"contexts": [64, 256, 512, 1024]}, flags=flags,
                       started_at=fakes.T0 + 600 * i)  # fmt: skip
        run_id = await store.start_run(info)
        for s in fakes.sweep_samples():
            # Two passages read twice each per point, the same on both runs, with a small
            # spread of their own: the comparison pairs them, so every change carries an
            # interval (one request per point has none to show).
            for passage, jitter in ((0, 0.98), (0, 1.01), (1, 1.02), (1, 0.99)):
                k = scale * (jitter if i == 0 else 2.0 - jitter)
                # tok/s and step time from the decode time too: the comparison pools them.
                await store.add_request(run_id, s.__class__(**{
                    **s.as_dict(), "prompt_id": s.prompt_id.replace("#0", f"#{passage}"),
                    "decode_tok_s": s.decode_tok_s * k,
                    "decode_time_s": s.decode_time_s / k, "step_time_s": s.step_time_s / k,
                }))  # fmt: skip
        await store.finish_run(run_id, "complete", None)
    store.close()


def repeated_sweep() -> list:
    """The fixed sweep measured on two passages per point, so every cell carries a range
    and the spread between passages, which a typed figure's interval holds, is measured."""
    out = []
    for s in fakes.sweep_samples():
        for window, k in enumerate((0.99, 1.01)):
            prompt_id = s.prompt_id.replace("#0", f"#{window}")
            out.append(s.__class__(**{**s.as_dict(), "prompt_id": prompt_id,
                                      "decode_tok_s": s.decode_tok_s * k,
                                      "step_time_s": s.step_time_s / k,
                                      "decode_time_s": s.decode_time_s / k}))  # fmt: skip
    return out


def prompt_result():
    """A prompt run three times at one point: the last request reports its rounds, and
    its output loops from the middle on (repetition 70%)."""
    from console.analysis.stats import summarize
    from console.measure.methods import MethodResult

    base = fakes.requests()[0]
    rounds = [[512 + 4 * i, 0.028 + 0.0001 * i, 4.0 - 0.02 * i] for i in range(32)]

    def scaled(k: float):
        return base.__class__(**{**base.as_dict(), "decode_tok_s": base.decode_tok_s * k,
                                 "decode_time_s": base.decode_time_s / k,
                                 "step_time_s": base.step_time_s / k})  # fmt: skip

    samples = [scaled(k) for k in (0.98, 1.0, 1.02)]
    samples[-1] = base.__class__(**{**samples[-1].as_dict(), "rounds": rounds,
                                    "repetition": 0.7, "text": "def parse(line):"})  # fmt: skip
    return MethodResult("prompt", 7, samples, summarize(samples))


def scenario(view: str) -> tuple[SpecConsoleApp, RunBefore]:
    service = fakes.FakeService(log=LOG_LINES)
    if view == "history":
        fill_history()

    async def run_before(pilot: Pilot) -> None:
        await ready(pilot, service)
        if view == "service":
            pilot.app.lifecycle = LifecycleEvent("ready", message="ready on port 30000",
                                                 at=fakes.T0)  # fmt: skip
            await pilot.press("s")
        elif view == "logs":
            await pilot.press("l")
        elif view == "flags":
            await pilot.press("f")
        elif view == "prompt":
            await pilot.press("p")
            await settle(pilot)
            pilot.app.screen.post_message(PromptRan(prompt_result()))
            await settle(pilot)
        elif view == "sweeps":
            from console.analysis.decompose import fit
            from console.analysis.stats import summarize

            await pilot.press("w")
            await settle(pilot)
            screen = pilot.app.screen
            samples = repeated_sweep()
            screen._show_points(summarize(samples), "context")
            screen._set_model(fit(samples), "fixed samples", samples)
            for selector, value in (("#v-observed", "40"), ("#v-context", "1024"),
                                    ("#v-text", "prose")):  # fmt: skip
                screen.query_one(selector).value = value
            screen.action_explain()
        elif view == "history":
            await pilot.press("h")
            await settle(pilot)
            await pilot.press("space", "down", "space", "c")
        elif view == "keys":
            await pilot.press("question_mark")
        await settle(pilot)

    return app_for(service), run_before


def fixed_clock() -> None:
    import os

    os.environ["TZ"] = "UTC"
    time.tzset()
