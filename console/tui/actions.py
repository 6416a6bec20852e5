"""Running service actions: the one-action rule, cancel, progress and one-sentence errors.

Every call that changes the engine (start, restart, stop, rollback, apply) or measures it
runs through `ActionRunner.run_service_action`: in a worker, so the UI keeps answering;
one at a time, as the service itself allows, so a second is refused with a sentence;
named in the status bar while it runs (the app's `running`), cancellable with C; and any
error becomes a one-sentence notification: a `ConsoleError` as it is, anything else as
one line naming the type. No traceback reaches the screen.

`EngineActions` holds what the engine-action keys do (and the flags screen's apply), so
the key bindings, the service screen's buttons and the palette all share one body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from textual.worker import Worker

from console.errors import ConfigError, one_line
from console.service import LifecycleEvent
from console.service.already_running import AlreadyRunning
from console.service.engine_service import ApplyResult, FlagPlan
from console.tui.messages import ActionProgress, ActionRefused, Answer, Request, answer
from console.tui.screens.modals import ConfirmScreen, InfoScreen

if TYPE_CHECKING:
    from console.analysis.noise_profile import NoiseProfile
    from console.doctor import DoctorReport
    from console.experiments.baseline import BaselineApply
    from console.tui.app import SpecConsoleApp


# Actions that launch the engine: cancelling one also stops what it launched.
LAUNCHES = frozenset({"start", "restart", "apply", "apply with baseline", "rollback"})

Tick = Callable[[int, int], None]  # (done, total) as a measurement method reports it


class ActionRunner:
    """The one running action of the session, and the rule that there is only one."""

    def __init__(self, app: SpecConsoleApp) -> None:
        self.app = app
        self.worker: Worker | None = None

    def run_service_action(
        self,
        what: str,
        call: Callable[[], Awaitable[Any]],
        on_result: Callable[[Any], None] | None = None,
        on_cancel: Callable[[], None] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> Worker | None:
        """Run one service call in a worker: progress shown, cancellable, errors as one
        sentence. A second action while one runs is refused, as the service would."""
        app = self.app
        if app.service is None:
            app.notify("Not connected to a host yet.", severity="warning")
            return None
        if app.running:
            app.notify(f"busy: {app.running} is running; wait for it or cancel it (C).",
                       severity="warning")  # fmt: skip
            return None

        async def body() -> None:
            app.running = what
            launch = what in LAUNCHES
            if launch:  # the Service view's log names every restart, whoever started it
                app.events.add(f"{what} started")
            try:
                result = await call()
            except asyncio.CancelledError:
                if launch:
                    app.events.add(f"{what} cancelled")
                if what in LAUNCHES:
                    await self._stop_launched(what)
                else:
                    app.notify(f"{what} cancelled.", severity="warning")
                if on_cancel is not None:
                    on_cancel()
                raise
            except Exception as exc:
                app.notify(one_line(exc), severity="error", timeout=10)
                if launch:
                    app.events.add(f"{what} failed: {one_line(exc)}")
                if on_error is not None:
                    on_error(one_line(exc))
            else:
                if launch:
                    app.events.add(f"{what} done")
                if on_result is not None:
                    on_result(result)
            finally:
                app.running = ""
                app.monitor.refresh_status_soon()

        self.worker = app.run_worker(body(), group="action", exit_on_error=False, description=what)
        return self.worker

    def run_request(
        self,
        request: Request,
        what: str,
        call: Callable[[Tick], Awaitable[Any]],
        reply: Callable[[Any], Answer],
    ) -> None:
        """Run a screen's request: progress ticks and the result (wrapped by `reply`) go
        back to the screen, and so does a refusal, so it can reset its progress bar."""

        def tick(done: int, total: int) -> None:
            answer(request, ActionProgress(what, done, total))

        worker = self.run_service_action(
            what,
            lambda: call(tick),
            lambda result: answer(request, reply(result)),
            on_cancel=lambda: answer(request, ActionRefused(what, cancelled=True)),
            on_error=lambda text: answer(request, ActionRefused(what, error=text)),
        )
        if worker is None:
            answer(request, ActionRefused(what))

    async def _stop_launched(self, what: str) -> None:
        """Cancelling a start (restart, apply, rollback) stops the engine it launched:
        cancelling only the wait would leave it coming up to ready behind the words
        "start cancelled". The state then says stopped, and why."""
        app = self.app
        app.running = f"stopping (cancelled {what})"
        try:
            await app.session_service().stop()
        except Exception as exc:
            app.notify(f"{what} cancelled, but stopping the engine failed: {one_line(exc)}",
                       severity="error", timeout=10)  # fmt: skip
            return
        app.lifecycle = LifecycleEvent("stopped", message=f"{what} cancelled; engine stopped")
        app.notify(f"{what} cancelled: the engine was stopped.", severity="warning")

    def cancel(self) -> None:
        worker = self.worker
        if worker is None or worker.is_finished:
            self.app.notify("Nothing is running.")
            return
        worker.cancel()


class EngineActions:
    """Start, restart, stop, roll back and apply: each confirmed where it interrupts
    serving, each run by the `ActionRunner`, each followed to ready or failure."""

    def __init__(self, app: SpecConsoleApp, runner: ActionRunner) -> None:
        self.app = app
        self.runner = runner

    @property
    def _timeout(self) -> float:
        return self.app.settings.ready_timeout_s

    def start(self) -> None:
        timeout = self._timeout
        self.runner.run_service_action(
            "start",
            lambda: self.app.service.start(wait=True, timeout=timeout),  # type: ignore[union-attr]
            self._settled,
        )

    def restart(self) -> None:
        self.confirm(
            f"Restart the engine on {self.app.host}?",
            "It stops serving until it is ready again.",
            lambda: self.runner.run_service_action(
                "restart",
                lambda: self.app.service.restart(wait=True, timeout=self._timeout),  # type: ignore[union-attr]
                self._settled,
            ),
        )

    def stop(self) -> None:
        self.confirm(
            f"Stop the engine on {self.app.host}?",
            "Requests in flight are cut off.",
            lambda: self.runner.run_service_action("stop", lambda: self.app.service.stop()),  # type: ignore[union-attr]
        )

    def calibrate(self) -> None:
        """`specconsole calibrate HOST`: blocks of the baseline's points with a restart
        between each two, unchanged flags; the profile is stored and shown."""
        # The experiments are imported when first used, not with the console.
        from console.experiments.baseline import plan_for
        from console.experiments.calibrate import BLOCKS, RESTARTS, calibrate

        app = self.app

        async def measure() -> NoiseProfile:
            session = app.live.measure_session()
            plan = await plan_for(session)
            return await calibrate(
                app.service, app.run_store(), plan=plan, timeout=self._timeout,  # type: ignore[arg-type]
                on_note=lambda text: app.notify(text),
            )  # fmt: skip

        def done(profile: NoiseProfile) -> None:
            app.push_screen(InfoScreen("Noise profile", "\n".join(profile.lines())))

        self.confirm(
            f"Calibrate {app.host}?",
            f"{BLOCKS} blocks of the baseline's points, {RESTARTS} restarts among them (flags "
            "unchanged): the host's request-to-request spread and its block-to-block drift.",
            lambda: self.runner.run_service_action("calibrate", measure, done),
        )

    def doctor(self) -> None:
        """`specconsole doctor HOST`: every check of the host, its lines as the CLI
        prints them (each problem with its fix). It changes nothing, so it asks nothing."""
        from console.doctor import run_doctor

        app = self.app

        def done(report: DoctorReport) -> None:
            app.push_screen(InfoScreen(f"Doctor: {app.host}", "\n".join(report.lines())))

        self.runner.run_service_action("doctor", lambda: run_doctor(app.service), done)  # type: ignore[arg-type]

    def rollback(self) -> None:
        self.runner.run_service_action(
            "rollback check", self._rollback_diff, self._confirm_rollback
        )

    async def _rollback_diff(self) -> str | None:
        from console.service.rollback import plan_rollback

        plan = await plan_rollback(self.app.session_service(), self.app.host)
        if not plan.possible:
            raise ConfigError(plan.text)
        return plan.diff or None

    def _confirm_rollback(self, diff: str | None) -> None:
        if diff is None:
            # Rolling back to equal flags would only restart: say so, and offer nothing
            # (restart has its own key for an operator who wants one).
            self.app.notify(
                f"Nothing to roll back on {self.app.host}: the last-good flags equal the "
                "current ones.",
                severity="warning",
            )
            return
        self.confirm(
            f"Roll back {self.app.host} to the last-good flags?",
            diff,
            lambda: self.runner.run_service_action(
                "rollback",
                lambda: self.app.service.rollback(timeout=self._timeout),  # type: ignore[union-attr]
                self._applied,
            ),
            diff=True,
        )

    def apply_plan(
        self,
        plan: FlagPlan,
        on_done: Callable[[bool], None] | None = None,
        *,
        baseline: bool = False,
        options: dict[str, Any] | None = None,
    ) -> Worker | None:
        """Write `plan`, restart and follow to ready, optionally between two baselines
        (`options`: `apply_with_baseline`'s overrides, target, order and calibrate, as `set
        --baseline` passes them)."""
        app = self.app

        def done(result: ApplyResult) -> None:
            self._applied(result)
            if on_done is not None:
                on_done(result.ok)

        timeout = self._timeout
        if not baseline:
            return self.runner.run_service_action(
                "apply",
                lambda: app.service.apply(plan, timeout=timeout),  # type: ignore[union-attr]
                done,
            )

        from console.experiments.baseline import apply_with_baseline

        def compared(outcome: BaselineApply) -> None:
            # The baseline's requests join the dashboard's last requests as the prompt
            # lab's and the sweeps' do (the experiment measures on its own session).
            blocks = (outcome.before, outcome.before_again, outcome.after)
            app.ingest_live(requests=[s for b in blocks if b is not None for s in b.samples])
            done(outcome.result)
            if outcome.rows:
                app.push_screen(InfoScreen("Baseline before and after",
                                           "\n".join(outcome.table_lines()),
                                           outcome.note_lines()))  # fmt: skip

        return self.runner.run_service_action(
            "apply with baseline",
            lambda: apply_with_baseline(
                app.service,  # type: ignore[arg-type]
                plan,
                timeout=timeout,
                store=app.run_store(),
                on_note=lambda text: app.notify(text),
                **(options or {}),
            ),
            compared,
        )

    def confirm(
        self, question: str, detail: str, then: Callable[[], object], *, diff: bool = False
    ) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                then()

        self.app.push_screen(ConfirmScreen(question, detail, diff=diff), done)

    def _settled(self, event: LifecycleEvent) -> None:
        app = self.app
        app.lifecycle = event
        app.server_info = None  # it described the process before this action
        if event.state == "ready":
            app.monitor.read_server_info()
            # A start that found it running says so, in the CLI's words.
            if isinstance(event, AlreadyRunning):
                pending = event.restart_pending
                app.notify(f"{app.host}: {event.message}.",
                           severity="warning" if pending else "information")  # fmt: skip
            else:
                app.notify(f"{app.host}: ready.")
        elif event.state == "failed":
            app.notify(f"The engine failed: {event.describe()}.", severity="error", timeout=10)
            app.switch_mode("service")

    def _applied(self, result: ApplyResult) -> None:
        self._settled(result.event)
