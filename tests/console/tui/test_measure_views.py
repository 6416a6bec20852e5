"""Prompt lab, sweeps and verdict, history: through the app against the real engine on
`local` (bundled weights, no warm-up). One engine start for all three views.

A typed prompt and a library prompt give results with their figures and text (and reach
the dashboard through the live series); a small
context sweep charts its points and fits a model the verdict explains a figure with;
history lists both runs, compares them side by side and exports them.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from console.analysis.noise_profile import NoiseProfile, PointNoise
from console.analysis.records import flags_hash
from console.config import HostProfile, LaunchProfile, load_profile, save_profile
from console.service import EngineService
from console.transport import open_transport
from console.tui.app import SpecConsoleApp
from console.tui.screens.history import HistoryScreen
from console.tui.screens.prompt_lab import PromptLabScreen
from console.tui.screens.sweeps import SweepsScreen
from tests.ports import free_port

pytest.importorskip("engine.serve.app", reason="engine server not available")
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


async def _until(pilot, what: str, check, timeout: float = 120) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"{what}: {[n.message for n in pilot.app._notifications]} "
                                 f"{pilot.app.status} {pilot.app.running}")  # fmt: skip
        await pilot.pause(0.1)


def _text(app, selector: str) -> str:
    try:
        return str(app.screen.query_one(selector).render())
    except Exception:
        return ""


def _set(app, selector: str, value: str) -> None:
    app.screen.query_one(selector).value = value


async def test_prompt_lab_sweep_verdict_history(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    save_profile(HostProfile(name="local", launch=LaunchProfile(python=sys.executable),
                             port=free_port(), state_dir=str(tmp_path / "state"),
                             flags={"skip-server-warmup": True}))  # fmt: skip
    app = SpecConsoleApp("local")  # with the live series feeding the dashboard
    try:
        async with app.run_test(size=(140, 45)) as pilot:
            await _until(pilot, "connected", lambda: app.status is not None)
            await pilot.press("S")
            await _until(pilot, "ready", lambda: app.status.state == "ready" and not app.running)

            # Prompt lab: a typed prompt, streamed.
            await pilot.press("p")
            await _until(pilot, "prompt lab", lambda: isinstance(app.screen, PromptLabScreen))
            lab = app.screen
            lab.query_one("#lab-type").value = "typed"
            await pilot.pause()
            lab.query_one("#lab-typed").load_text("def parse(line):\n")
            _set(app, "#lab-max", "24")
            lab.query_one("#lab-stream").value = True
            await pilot.press("ctrl+r")
            table = lab.query_one("#lab-results")
            await _until(pilot, "typed result", lambda: table.row_count == 1 and not app.running)
            row = table.get_row_at(0)
            assert row[0] == "custom" and row[2] == "24/24" and row[3] != "-" and row[4] != "-"
            assert "streamed" in row[9]
            assert lab.query_one("#lab-output").text  # the generated text
            assert "stored as run" in _text(app, "#lab-note")
            # --prompts: a .txt of extra text is a type named after the file, offered by
            # the select once the field is left, and read from the session's library.
            (tmp_path / "ops.txt").write_text("The operator restarts the engine and reads "
                                              "the log for the ready line. " * 60)  # fmt: skip
            _set(app, "#lab-prompts", str(tmp_path / "ops.txt"))
            lab.query_one("#lab-prompts").focus()
            await pilot.pause()
            table_widget = lab.query_one("#lab-results")
            table_widget.focus()  # leaving the field reads the file
            kinds = lambda: [v for _label, v in lab.query_one("#lab-type")._options]  # noqa: E731
            await _until(pilot, "the file's type offered", lambda: "ops" in kinds())
            # a library prompt of that type, padded to an exact context; the dashboard
            # lists both
            lab.query_one("#lab-type").value = "ops"
            lab.query_one("#lab-stream").value = False
            _set(app, "#lab-context", "48")
            await pilot.press("ctrl+r")
            await _until(pilot, "library result", lambda: table.row_count == 2 and not app.running)
            # newest first, selected: the library prompt above the typed one
            assert table.get_row_at(0)[:2] == ["ops", "48"] and table.cursor_row == 0
            assert len(app.requests) == 2
            # each measured request also went through the live series to the charts
            await _until(pilot, "live samples", lambda: any(
                s.source == "request" for s in app.live_samples))  # fmt: skip

            # A bad field is one sentence, nothing sent.
            _set(app, "#lab-max", "many")
            await pilot.press("ctrl+r")
            await _until(pilot, "refusal", lambda: any(
                "Max tokens must be a whole number" in n.message
                for n in app._notifications))  # fmt: skip

            # Sweep: contexts 32,512,1024 x code, 16 tokens out; charts, points, model. The
            # contexts lie far apart: on a loaded host, three close ones can give a step line
            # that falls with context, which the verdict rightly calls a measurement problem.
            # A calibration stored for these flags (as `specconsole calibrate` leaves one):
            # the typed verdict below carries its noise and drift, as `diagnose` does.
            flags = flags_hash(dict(app.status.config.flags))
            await app.run_store().add_noise_profile(NoiseProfile(
                host="local", engine="builtin", flags_hash=flags,
                points=(PointNoise("code", 512, 0.06, 12),), shifts=(0.03, -0.02),
                restart_s=(4.0, 4.0)))  # fmt: skip
            await pilot.press("w")
            await _until(pilot, "sweeps", lambda: isinstance(app.screen, SweepsScreen))
            sweeps = app.screen
            _set(app, "#sweep-contexts", "32,512,1024")
            _set(app, "#sweep-outputs", "16")
            _set(app, "#sweep-types", "code")
            _set(app, "#sweep-repeat", "2")  # a verdict needs a spread to resample
            # A prompt file the library cannot read: one sentence, nothing run.
            _set(app, "#sweep-prompts", str(tmp_path / "missing.jsonl"))
            await pilot.press("ctrl+r")
            await _until(pilot, "the file refused", lambda: any(
                "Cannot read prompt file" in n.message for n in app._notifications))  # fmt: skip
            await _until(pilot, "no action", lambda: not app.running)
            assert "refused" in _text(app, "#sweep-note")
            _set(app, "#sweep-prompts", "")
            await pilot.press("ctrl+r")
            await _until(pilot, "sweep done", lambda: sweeps.model is not None and not app.running)
            assert sweeps.query_one("#sweep-points").row_count == 3
            assert sweeps.sweep is not None and len(sweeps.sweep.samples) == 6
            assert "no data yet" not in sweeps.query_one("#sweep-tok").render().plain
            assert "step time =" in _text(app, "#verdict")

            # A typed figure, half what the model predicts, through the CLI's typed path: the
            # prompt length as typed, read mid-decode, the median of 3 requests, carrying
            # this host's measured noise (on the tiny random pair that noise is wide, so
            # the honest answer may be "not enough evidence" rather than "not physics").
            predicted = sweeps.model.predict(512 + 16 / 2, "code")
            _set(app, "#v-observed", f"{predicted / 2:.1f}")
            _set(app, "#v-context", "512")
            _set(app, "#v-text", "code")
            _set(app, "#v-requests", "3")
            await pilot.press("ctrl+t")
            await _until(pilot, "verdict", lambda: "noise" in _text(app, "#verdict"))
            verdict = _text(app, "#verdict")
            assert verdict.startswith(("Not physics", "Not enough evidence")), verdict
            assert "prompt 512 + 16 out (mid-decode context 520)" in verdict
            assert "the median of 3 requests" in verdict and "carries this host's noise" in verdict
            assert "calibration of local" in verdict and "drift" in verdict, verdict
            # Typed figures are the operator's own: the passage term is in, and when it
            # leaves the answer open the view offers the settling run, which `e` runs on
            # the engine (both points on the plan's passages), as `diagnose --settle`.
            assert "spread between passages" in verdict, verdict
            settling = sweeps.query_one("#sweep-settle-button").display
            if settling:
                plan = sweeps._settle
                await pilot.press("e")
                await _until(pilot, "settled", lambda: "settling run" in _text(app, "#verdict")
                             and not app.running, timeout=240)  # fmt: skip
                settled = _text(app, "#verdict")
                assert f"on {plan.passages} passages read {plan.reads} times" in settled
                assert "observed vs measured" in settled, settled
            else:
                await pilot.press("e")
                await _until(pilot, "nothing to settle", lambda: any(
                    "Nothing to settle" in n.message for n in app._notifications))  # fmt: skip

            # History: both kinds of run, two compared, exported.
            await pilot.press("h")
            await _until(pilot, "history", lambda: isinstance(app.screen, HistoryScreen))
            hist = app.screen
            runs = hist.query_one("#hist-runs")
            sweeps_run = ["sweep"] * (2 if settling else 1)  # the settling run is a sweep
            n = len(sweeps_run) + 2
            await _until(pilot, "runs listed", lambda: runs.row_count == n)
            kinds = [runs.get_row_at(i)[4] for i in range(n)]  # the kind column, then method
            methods = [runs.get_row_at(i)[5] for i in range(n)]
            assert kinds == [*sweeps_run, "prompt", "prompt"]
            assert methods == ["context-sweep"] * len(sweeps_run) + ["probe", "probe"]
            await pilot.press("slash", *"sweep", "enter")
            await _until(pilot, "filtered", lambda: runs.row_count == len(sweeps_run))
            await pilot.press("slash", *["backspace"] * 5, "enter")
            await _until(pilot, "unfiltered", lambda: runs.row_count == n)
            await pilot.press("space", "down", "space", "c")
            await _until(pilot, "compare", lambda: "A: run" in _text(app, "#hist-text"))
            shown = _text(app, "#hist-text")
            assert "B: run" in shown and "same flags" in shown
            await pilot.press("J")
            await _until(pilot, "export", lambda: list(tmp_path.glob("specconsole-runs-*.json")))
            exported = json.loads(next(tmp_path.glob("specconsole-runs-*.json")).read_text())
            assert len(exported["runs"]) == 2
    finally:
        profile = load_profile("local")
        transport = open_transport(profile)
        try:
            await EngineService(profile, transport).stop(timeout=10)
        finally:
            await transport.close()
