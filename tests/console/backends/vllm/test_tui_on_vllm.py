"""The Textual console (pilot) on the real vLLM server the tier shares: the dashboard's
"now" readout shows the live series' tok/s, commit and step time from vLLM's own
counters, and the flags form's apply (`num_speculative_tokens` 15 -> 7 inside
`--speculative-config`) restarts vLLM, which then drafts 7 tokens a round.

The last module on the tier's server: its last test stops it."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import httpx
import pytest

from console.analysis.records import LiveSample
from console.backends.vllm.live import sample_from_scrapes
from console.tui.app import SpecConsoleApp
from console.tui.screens.dashboard import DashboardScreen
from console.tui.screens.flags import FlagsScreen
from console.tui.screens.modals import ConfirmScreen
from console.tui.settings import TuiSettings
from tests.console.backends.vllm.tier import (
    DRAFT_TOKENS,
    DRAFTER,
    DRAFTS,
    READY_TIMEOUT,
    TARGET,
    Tier,
    delta,
)
from tests.console.tui.test_app_engine import state, text, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(1200)]

SPEC = "speculative-config"


@pytest.fixture
def tui_home(vllm_tier: Tier, monkeypatch: pytest.MonkeyPatch) -> Tier:
    """The app in this process reads the tier's profiles and history."""
    monkeypatch.setenv("SPECCONSOLE_CONFIG_DIR", str(vllm_tier.home / "config"))
    monkeypatch.setenv("SPECCONSOLE_DATA_DIR", str(vllm_tier.home / "data"))
    return vllm_tier


def _complete(tier: Tier, max_tokens: int) -> None:
    body = {"model": str(TARGET), "prompt": "def fibonacci(n):", "max_tokens": max_tokens,
            "temperature": 0, "ignore_eos": True}  # fmt: skip
    httpx.post(tier.url("/v1/completions"), json=body, timeout=120).raise_for_status()


def _readout(app: SpecConsoleApp) -> tuple[str, str]:
    """(the big tok/s figure, the "commit ... step ...ms" line) as the dashboard shows them
    (the line above says how old they are)."""
    lines = text(app, "#now-text").splitlines()
    figures = next((ln for ln in lines if ln.startswith("commit")), "")
    return str(app.screen.query_one("#now-tok").value), figures


def _newest(app: SpecConsoleApp) -> LiveSample | None:
    """The sample the readout's tok/s comes from: the newest that has figures."""
    ok = [s for s in app.live_samples if s.tok_s is not None or s.commit_len is not None]
    return ok[-1] if ok else None


async def _one_window(pilot, tier: Tier, max_tokens: int = 160) -> Window:
    """One request inside one scrape window of the series (no other traffic, so that
    window's deltas are exactly ours, from our own scrapes around it) and the readout
    while its sample was the newest. A request that straddled two windows, or whose
    sample a log line displaced before the screen showed it, is sent again, shorter each
    time (a host at half speed took longer than a scrape window for 160 tokens, 5 of 5)."""
    app = pilot.app
    for attempt in range(6):
        tokens = max(32, max_tokens >> min(attempt, 2))  # 160, 80, then 40
        t0 = time.time()
        before = await asyncio.to_thread(tier.settled_metrics)
        await asyncio.to_thread(_complete, tier, tokens)
        after = await asyncio.to_thread(tier.settled_metrics)

        def windows(t0: float = t0) -> list[LiveSample]:
            return [s for s in app.live_samples
                    if s.source == "metrics" and s.t > t0 and s.commit_len is not None]  # fmt: skip

        try:  # none: the series had no scrape before it (just started or reconnected)
            await wait_for(pilot, "a /metrics sample of the request", lambda: windows(), 20)
        except AssertionError:
            continue
        first = windows()[0]
        shown = None
        for _ in range(30):  # the readout follows within a refresh
            if _newest(app) is not first:
                break
            if _readout(app)[0] == f"{first.tok_s:.1f}":
                shown = _readout(app)
                break
            await pilot.pause(0.1)
        await pilot.pause(5)  # two more scrapes: a straddled request shows a second window
        if len(windows()) == 1 and shown is not None:
            expected = sample_from_scrapes(before, after)
            assert expected is not None and delta(before, after, DRAFTS) > 0
            return Window(first, expected, shown)
    raise AssertionError("no request fell inside one scrape window of the live series")


@dataclass
class Window:
    sample: LiveSample  # the live series' /metrics sample of the request
    expected: LiveSample  # the same, from our own scrapes just before and after it
    shown: tuple[str, str]  # the dashboard's readout while that sample was the newest

    def check(self) -> None:
        sample, expected = self.sample, self.expected
        assert sample.commit_len == pytest.approx(expected.commit_len)
        assert sample.step_time_s == pytest.approx(expected.step_time_s)
        assert sample.tok_s == pytest.approx(expected.commit_len / expected.step_time_s)
        commit, step_ms = f"{sample.commit_len:.2f}", f"{sample.step_time_s * 1e3:.1f}"
        assert self.shown == (f"{sample.tok_s:.1f}", f"commit {commit}  step {step_ms}ms")

    def text(self) -> str:
        return (f"{self.shown[0]} tok/s, {self.shown[1]}; vLLM's window: commit 1 + "
                f"Δaccepted/Δdrafts = {self.expected.commit_len:.2f}, step ΔITL sum/count = "
                f"{self.expected.step_time_s * 1e3:.2f} ms")  # fmt: skip


async def test_dashboard_shows_vllms_live_figures_and_apply_restarts_with_7_drafts(
    tui_home: Tier,
) -> None:
    tier, name = tui_home, tui_home.name
    app = SpecConsoleApp(name, settings=TuiSettings(status_poll_s=0.5))
    async with app.run_test(size=(130, 42)) as pilot:
        await wait_for(pilot, "ready", lambda: state(app) == "ready", 120)
        assert isinstance(app.screen, DashboardScreen)
        await wait_for(pilot, "the live series", lambda: app.live.live_series is not None, 60)
        await pilot.pause(3)  # the series' first scrape: the baseline of its first window

        window = await _one_window(pilot, tier)
        window.check()
        print(f"TUI dashboard: {window.text()}")

        # Apply through the flags form: the edit inside --speculative-config, a restart.
        seven = json.dumps({"method": "dflash", "model": str(DRAFTER),
                            "num_speculative_tokens": 7})  # fmt: skip
        await pilot.press("f")
        await wait_for(pilot, "the flags form", lambda: isinstance(app.screen, FlagsScreen))
        screen = app.screen
        await wait_for(pilot, "the schema", lambda: SPEC in screen.specs, 120)
        await pilot.press("slash", *SPEC, "enter")
        await wait_for(pilot, f"{SPEC} selected", lambda: screen.selected == SPEC)
        await pilot.press("enter")  # to the value box
        screen.query_one("#flag-value").value = seven
        await pilot.press("enter")
        await wait_for(pilot, "staged", lambda: screen.staged.get(SPEC) == seven, 60)
        await pilot.press("a")
        await wait_for(pilot, "the diff", lambda: isinstance(app.screen, ConfirmScreen), 60)
        assert '"num_speculative_tokens": 7' in app.screen.detail
        pid = app.status.pid
        await pilot.press("y")
        await wait_for(
            pilot, "the restart", lambda: not app.running and state(app) == "ready"
            and app.status.pid != pid, READY_TIMEOUT,
        )  # fmt: skip
        await pilot.press("d")
        await pilot.pause(3)  # the series reconnects (a backoff of at most 10 s)
        after_apply = await _one_window(pilot, tier)
        after_apply.check()
        assert after_apply.sample.commit_len <= 8  # 7 drafts and the verified token
        await pilot.press("q")

    status = tier.json("status", name)
    assert status["state"] == "ready" and status["speculation"]["draft_tokens"] == 7
    assert "num_spec_tokens=7)" in tier.log()  # vLLM's own config line of this run
    before = tier.metrics()
    _complete(tier, 64)
    after = tier.metrics()
    drafts = delta(before, after, DRAFTS)
    assert drafts > 0 and delta(before, after, DRAFT_TOKENS) == 7 * drafts
    print(f"TUI apply: 7 drafts a round ({delta(before, after, DRAFT_TOKENS):.0f} draft tokens "
          f"/ {drafts:.0f} rounds); dashboard after it: {after_apply.text()}")  # fmt: skip


def test_stop_ends_the_server(vllm_tier: Tier) -> None:
    vllm_tier.stop()
    assert vllm_tier.json("status", vllm_tier.name)["state"] == "stopped"
    with pytest.raises(httpx.ConnectError):
        httpx.get(vllm_tier.url("/health"), timeout=5)
