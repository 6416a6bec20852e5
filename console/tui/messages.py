"""What screens and the app say to each other, as Textual messages.

Screens never call the app: they post a request (connect, run an engine action, plan or
apply flags, run a prompt or a sweep, confirm then run), which bubbles up to the app.
The app runs it under the one-action rule and posts the answer back to the screen that
asked (`origin`): progress, the result, or that it was refused. Shared state (service
status, lifecycle, link, the running action) flows the other way as the app's
reactives, read through `console.tui.state.SessionState`.

Answers do not bubble: they are for the asking screen only, and an unhandled one must
not reach the app as if it were a request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from textual.message import Message
from textual.message_pump import MessagePump

from console.service.engine_service import FlagPlan

if TYPE_CHECKING:
    from console.measure.methods import MethodResult

EngineActionName = Literal["start", "restart", "stop", "rollback"]


class Request(Message):
    """A screen asks the app for something; answers go to `origin` (set on posting)."""

    def __init__(self) -> None:
        super().__init__()
        self.origin: MessagePump | None = None


# -- requests: screen -> app -------------------------------------------------------------


class ConnectTo(Request):
    """Open `host` (a profile, user@host or ssh-config alias)."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


class RunAction(Request):
    """Start, restart, stop or roll back the engine, as its key binding does."""

    def __init__(self, action: EngineActionName) -> None:
        super().__init__()
        self.action = action


class PlanFlags(Request):
    """Validate staged flag changes and diff them; answered with `FlagsPlanned`."""

    def __init__(self, changes: dict[str, str | None]) -> None:
        super().__init__()
        self.changes = changes


class ApplyFlags(Request):
    """Write `plan`, restart and follow to ready; answered with `FlagsApplied`."""

    def __init__(
        self, plan: FlagPlan, *, baseline: bool = False, options: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.plan = plan
        self.baseline = baseline
        # `apply_with_baseline`'s overrides, target, order and calibrate (screens/flags_baseline.py)
        self.options = options or {}


class RunPrompt(Request):
    """One `methods.probe` call with these keyword arguments; answered with `PromptRan`.
    `prompts` is `--prompts`: a file of extra texts the session's library adds first."""

    def __init__(self, request: dict[str, Any], *, prompts: str = "") -> None:
        super().__init__()
        self.request = request
        self.prompts = prompts


class RunSweep(Request):
    """A context or output sweep, a two-point or a stream check (`kind`) with these
    keyword arguments (and `--prompts`' file, as `RunPrompt`); answered with `SweepRan`."""

    def __init__(self, kind: str, params: dict[str, Any], *, prompts: str = "") -> None:
        super().__init__()
        self.kind = kind
        self.params = params
        self.prompts = prompts


class RunBreakeven(Request):
    """`breakeven.run_breakeven` with these keyword arguments; answered with
    `BreakevenRan` (`prompts` as `RunPrompt`'s)."""

    def __init__(self, params: dict[str, Any], *, prompts: str = "") -> None:
        super().__init__()
        self.params = params
        self.prompts = prompts


class RunSettle(Request):
    """`settle.settle` on this plan (`diagnose --settle`); answered with `SettleRan`."""

    def __init__(self, plan: Any, *, profile: Any = None, limit: int | None = None) -> None:
        super().__init__()
        self.plan = plan  # analysis.settle_plan.SettlePlan
        self.profile = profile  # the host's calibration, as the typed verdict read it
        self.limit = limit


class ConfirmAndRun(Request):
    """Ask `question` (with `detail`, shown as a diff when `diff`), then post `then`."""

    def __init__(self, question: str, detail: str, then: Request, *, diff: bool = False) -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.then = then
        self.diff = diff


# -- answers: app -> the asking screen ---------------------------------------------------


class Answer(Message, bubble=False):
    """The app's answer to one request, posted to the request's origin only."""


class ActionProgress(Answer):
    def __init__(self, what: str, done: int, total: int) -> None:
        super().__init__()
        self.what = what
        self.done = done
        self.total = total


class ActionRefused(Answer):
    """The request was not run (not connected, another action is running, the engine is
    down), was cancelled (C) while it ran, or failed (`error`, the sentence shown): in
    each case the screen ends its progress and says which (`outcome`)."""

    def __init__(self, what: str, *, cancelled: bool = False, error: str = "") -> None:
        super().__init__()
        self.what = what
        self.cancelled = cancelled
        self.error = error

    @property
    def outcome(self) -> str:
        """One line for the progress row: what became of the action."""
        if self.cancelled:
            return f"{self.what} cancelled; samples taken are kept"
        if self.error:
            return f"{self.what} failed: {self.error}"
        return f"{self.what} not run (refused; see the message)"


class FlagsPlanned(Answer):
    def __init__(self, plan: FlagPlan) -> None:
        super().__init__()
        self.plan = plan


class FlagsApplied(Answer):
    def __init__(self, ok: bool) -> None:
        super().__init__()
        self.ok = ok


class PromptRan(Answer):
    def __init__(self, result: MethodResult) -> None:
        super().__init__()
        self.result = result


class SweepRan(Answer):
    def __init__(self, kind: str, result: MethodResult) -> None:
        super().__init__()
        self.kind = kind
        self.result = result


class RunLoad(Request):
    """`load.run_load` with these keyword arguments; answered with `LoadRan`."""

    def __init__(self, params: dict[str, Any], *, prompts: str = "") -> None:
        super().__init__()
        self.params = params
        self.prompts = prompts


class LoadRan(Answer):
    def __init__(self, result: Any) -> None:  # experiments.load.LoadResult
        super().__init__()
        self.result = result


class BreakevenRan(Answer):
    def __init__(self, result: Any) -> None:  # experiments.breakeven.BreakevenResult
        super().__init__()
        self.result = result


class SettleRan(Answer):
    def __init__(self, result: Any) -> None:  # experiments.settle.Settled
        super().__init__()
        self.result = result


def answer(request: Request, message: Answer) -> None:
    """Post `message` to whoever asked (nowhere when the request came from the app)."""
    if request.origin is not None:
        request.origin.post_message(message)


def send(node: MessagePump, request: Request) -> None:
    """Post `request` from `node` up to the app; `node` receives the answers."""
    request.origin = node
    node.post_message(request)
