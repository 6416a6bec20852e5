"""Screens talk to the app only through messages: requests go up, answers come back to
the screen that asked. Checked here with the fixed stand-in service (fast, no engine);
tests/console/tui/test_app_engine.py and test_measure_views.py run the same paths for real.

Also the boundary that makes this hold: no screen or widget imports the app module.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
from pathlib import Path
from types import SimpleNamespace

from console.measure import methods
from console.service import LifecycleEvent
from console.service.engine_service import ApplyResult, FlagPlan
from console.tui.app import SpecConsoleApp
from console.tui.screens.flags import FlagsScreen
from console.tui.screens.modals import ConfirmScreen
from console.tui.screens.sweeps import SweepsScreen
from console.tui.settings import TuiSettings
from tests.console.tui import fakes

TUI = Path(__file__).resolve().parents[3] / "console" / "tui"
APP_MODULE = "console.tui.app"


def app_imports(source: str, module: str) -> list[str]:
    """Each import of the app module in `source` (a module named `module`), as written."""
    package = module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == APP_MODULE]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing module's package
                parts = package.split(".")
                parent = parts[: len(parts) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names]
            if base == APP_MODULE or APP_MODULE in names:
                found.append(f"from {'.' * node.level}{node.module or ''} import ...")
    return found


def test_the_boundary_check_catches_every_spelling() -> None:
    mod = "console.tui.screens.x"
    assert app_imports("from console.tui.app import one_line", mod)
    assert app_imports("import console.tui.app", mod)
    assert app_imports("from console.tui import app", mod)
    assert app_imports("def f():\n    from ..app import SpecConsoleApp", mod)
    assert not app_imports("from console.tui.actions import one_line", mod)
    assert not app_imports("from textual.app import ComposeResult", mod)


def test_no_screen_or_widget_imports_the_app() -> None:
    offenders = {}
    for folder in ("screens", "widgets"):
        for path in sorted((TUI / folder).glob("*.py")):
            module = f"console.tui.{folder}.{path.stem}"
            hits = app_imports(path.read_text(), module)
            if hits:
                offenders[str(path.relative_to(TUI))] = hits
    assert not offenders, f"screens and widgets post messages instead: {offenders}"


async def test_the_app_provides_every_part_of_the_session_state() -> None:
    from console.tui.state import SessionState

    names = set(SessionState.__annotations__) | {
        n for n in vars(SessionState) if not n.startswith("_")
    }
    app = _app(fakes.FakeService())
    async with app.run_test(size=(120, 40)):
        missing = sorted(n for n in names if not hasattr(app, n))
    assert not missing, f"SpecConsoleApp lacks {missing}"


class Applying(fakes.FakeService):
    """Plans and applies flags as the real service would, recording what it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.applied: list[FlagPlan] = []
        self.started = 0

    async def plan(self, changes):
        new = dataclasses.replace(fakes.CONFIG, flags={**fakes.FLAGS, **changes})
        diff = "".join(f"-{k}\n+{k}={v}\n" for k, v in changes.items())
        return FlagPlan(old=fakes.CONFIG, new=new, diff=diff)

    async def apply(self, plan, **_):
        self.applied.append(plan)
        return ApplyResult(LifecycleEvent("ready", at=fakes.T0), plan.new)

    async def start(self, **_):
        self.started += 1
        return LifecycleEvent("ready", at=fakes.T0)


def _app(service) -> SpecConsoleApp:
    return SpecConsoleApp("gpu1", settings=TuiSettings(), service=service, poll=False, live=False)


async def _until(pilot, check, timeout: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        notes = [n.message for n in pilot.app._notifications]
        assert loop.time() < deadline, notes
        await pilot.pause(0.05)


async def test_flags_are_planned_confirmed_and_applied_through_messages() -> None:
    service = Applying()
    app = _app(service)
    async with app.run_test(size=(130, 42)) as pilot:
        await pilot.press("f")
        await _until(pilot, lambda: isinstance(app.screen, FlagsScreen) and app.screen.specs)
        screen = app.screen
        screen.staged["speculative-draft-window-size"] = "16"
        await pilot.press("a")  # PlanFlags -> FlagsPlanned -> ConfirmAndRun
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "speculative-draft-window-size=16" in app.screen.detail
        await pilot.press("y")  # ApplyFlags -> FlagsApplied
        await _until(pilot, lambda: service.applied and not app.running and not screen.staged)
        assert service.applied[0].new.flags["speculative-draft-window-size"] == "16"
        assert app.lifecycle is not None and app.lifecycle.state == "ready"


async def test_a_service_button_runs_the_same_action_as_its_key() -> None:
    service = Applying()
    service._status = fakes.status("stopped")
    app = _app(service)
    async with app.run_test(size=(130, 42)) as pilot:
        await pilot.press("s")
        await pilot.pause(0.2)
        await pilot.click("#svc-start")  # RunAction("start")
        await _until(pilot, lambda: service.started == 1 and not app.running)


async def test_a_sweep_gets_its_progress_and_result_or_its_refusal(monkeypatch) -> None:
    from console.analysis.decompose import fit
    from console.analysis.stats import summarize

    samples = fakes.sweep_samples()
    ticks: list[tuple[int, int]] = []
    release = asyncio.Event()

    async def sweep(_session, *, tick, **params):
        for done in range(1, 4):
            tick(done, 3)
            ticks.append((done, 3))
        await release.wait()
        return SimpleNamespace(samples=samples, run_id=7, points=summarize(samples),
                               model=fit(samples), figures={})  # fmt: skip

    monkeypatch.setattr(methods, "context_sweep", sweep)
    app = _app(fakes.FakeService())
    async with app.run_test(size=(150, 48)) as pilot:
        await pilot.press("w")
        await _until(pilot, lambda: isinstance(app.screen, SweepsScreen))
        screen = app.screen
        await pilot.press("ctrl+r")  # RunSweep
        await _until(pilot, lambda: "3/3 requests" in str(screen.query_one("#sweep-note").render()))
        assert app.running == "context sweep"
        # A second request while one runs is refused, and the screen hears so.
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: not screen.query_one("#sweep-progress").display)
        assert any("busy: context sweep" in n.message for n in app._notifications)
        # The answer reaches the screen that asked even when another view is showing.
        await pilot.press("d")
        release.set()  # SweepRan
        await _until(pilot, lambda: screen.model is not None and not app.running)
        await pilot.press("w")
        assert app.screen is screen
        assert "stored as run 7" in str(screen.query_one("#sweep-note").render())
