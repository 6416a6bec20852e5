"""The measurement requests screens send the app: a prompt, a sweep (or a two-point, a
stream check), a break-even run, a verdict's settling measurement. Each calls the same
function its CLI command calls (`measure.methods`, `experiments.breakeven`,
`experiments.settle`) through the app's one-action rule, with progress and cancel,
and is refused with the start key while the engine is down.

A mixin of `SpecConsoleApp` (Textual finds `on_*` handlers on every class of the app).
"""

from __future__ import annotations

from typing import Any

from console.errors import ConsoleError
from console.tui import keys, messages
from console.tui.messages import answer
from console.tui.widgets.status_bar import state_text

# The sweeps view's methods (its method select), as `specconsole sweep --contexts`,
# `sweep --outputs`, `twopoint` and `streamcheck` call them.
METHOD_CALLS = {"context": "context_sweep", "output": "output_sweep",
                "two-point": "two_point", "stream check": "stream_check"}  # fmt: skip


class MeasureRequests:
    """The handlers; `self` is the app (its runner, live feed, keymap, host)."""

    runner: Any
    live: Any
    keymap: dict[str, str]
    host: str | None
    running: str

    def _engine_not_ready(self, request: messages.Request, what: str) -> bool:
        """Refuse a measurement while the engine is known to be down, with the key that
        starts it (the measure core's own sentence names the CLI command instead)."""
        state, _ = state_text(self)
        if state not in ("stopped", "failed") or self.running:
            return False
        start = keys.display_keys(keys.BY_ID["start"], self.keymap)
        self.notify(f"The engine on {self.host} is {state}: press {start} to start it.",
                    severity="warning")  # fmt: skip
        answer(request, messages.ActionRefused(what))
        return True

    def _with_prompts(self, request: Any, what: str) -> bool:
        """`--prompts`: add the request's file of extra texts to the session's library,
        as `specconsole`'s `measure_session` does; a file it cannot use refuses the
        request with the library's one sentence."""
        if not request.prompts:
            return True
        try:
            self.live.measure_session().library.extend_from_file(request.prompts)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            answer(request, messages.ActionRefused(what))
            return False
        return True

    def on_run_prompt(self, request: messages.RunPrompt) -> None:
        if self._engine_not_ready(request, "prompt") or not self._with_prompts(request, "prompt"):
            return
        from console.measure import methods  # imported at the first run, not at start-up

        measure, kwargs = self.live.measure_session, request.request
        self.runner.run_request(
            request,
            "prompt",
            lambda tick: methods.probe(measure(), tick=tick, **kwargs),
            messages.PromptRan,
        )

    def on_run_sweep(self, request: messages.RunSweep) -> None:
        if self._engine_not_ready(request, request.kind):
            return
        if not self._with_prompts(request, request.kind):
            return
        from console.measure import methods

        kind, measure, kwargs = request.kind, self.live.measure_session, request.params
        run = getattr(methods, METHOD_CALLS[kind])
        self.runner.run_request(
            request,
            f"{kind} sweep" if kind in ("context", "output") else kind,
            lambda tick: run(measure(), tick=tick, **kwargs),
            lambda result: messages.SweepRan(kind, result),
        )

    def on_run_breakeven(self, request: messages.RunBreakeven) -> None:
        """`specconsole breakeven`: speculation on, off and back, per context. Not a
        launch for cancel's sake: the experiment restores the flags itself."""
        if self._engine_not_ready(request, "break-even"):
            return
        if not self._with_prompts(request, "break-even"):
            return
        from console.experiments.breakeven import run_breakeven

        measure, kwargs = self.live.measure_session, request.params
        self.runner.run_request(
            request,
            "break-even",
            lambda tick: run_breakeven(measure(), tick=tick, **kwargs),
            messages.BreakevenRan,
        )

    def on_run_load(self, request: messages.RunLoad) -> None:
        """`specconsole load`: N requests at once per level, speculation on, off and back."""
        if self._engine_not_ready(request, "load"):
            return
        if not self._with_prompts(request, "load"):
            return
        from console.experiments.load import run_load

        measure, kwargs = self.live.measure_session, request.params
        self.runner.run_request(
            request, "load", lambda tick: run_load(measure(), tick=tick, **kwargs),
            messages.LoadRan,
        )  # fmt: skip

    def on_run_settle(self, request: messages.RunSettle) -> None:
        """`specconsole diagnose --settle`: both typed points on the same passages."""
        if self._engine_not_ready(request, "settle"):
            return
        from console.experiments.settle import settle

        measure, plan = self.live.measure_session, request.plan

        def run(tick: Any) -> Any:
            return settle(measure(), plan, profile=request.profile, limit=request.limit,
                          tick=tick)  # fmt: skip

        self.runner.run_request(request, "settle", run, messages.SettleRan)
