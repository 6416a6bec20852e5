"""The Textual console (pilot) on the real vLLM server the tier shares: the dashboard's
"now" readout shows the live series' tok/s, commit and step time from vLLM's own
counters, and the flags form's apply (`num_speculative_tokens` 15 -> 7 inside
`--speculative-config`) restarts vLLM, which then drafts 7 tokens a round.

The last module on the tier's server: its last test stops it."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from console.analysis.records import LiveSample
from console.backends.vllm.live import sample_from_scrapes
from console.tui.app import SpecConsoleApp
from console.tui.screens.dashboard import DashboardScreen
from console.tui.screens.dashboard_figures import now_figures, now_lines
from console.tui.screens.flags import FlagsScreen
from console.tui.screens.modals import ConfirmScreen
from console.tui.settings import TuiSettings
from tests.console.backends.vllm.tier import DRAFTER, DRAFTS, READY_TIMEOUT, TARGET, Tier, delta
from tests.console.tui.test_app_engine import state, text, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(1200)]

SPEC = "speculative-config"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"


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


async def _one_window(pilot, tier: Tier, max_tokens: int = 160) -> tuple[LiveSample, LiveSample]:
    """(the series' /metrics sample, the same figures from our own scrapes around one
    request): a request that fell inside one scrape window of the series (no other
    traffic) gives that window exactly its counter deltas; one that straddled two is
    sent again."""
    app = pilot.app
    for _ in range(4):
        t0 = time.time()
        before = await asyncio.to_thread(tier.metrics)
        await asyncio.to_thread(_complete, tier, max_tokens)
        after = await asyncio.to_thread(tier.metrics)

        def windows(t0: float = t0) -> list[LiveSample]:
            return [s for s in app.live_samples if s.source == "metrics" and s.t > t0]

        await wait_for(pilot, "a /metrics sample of the request", lambda: windows(), 60)
        await pilot.pause(5)  # two more scrapes: a straddled request shows a second window
        if len(windows()) == 1:
            expected = sample_from_scrapes(before, after)
            assert expected is not None and delta(before, after, DRAFTS) > 0
            return windows()[0], expected
    raise AssertionError("every request straddled two scrape windows of the live series")


def _readout(app: SpecConsoleApp) -> tuple[str, str]:
    """(the big tok/s figure, the lines under it) as the dashboard shows them."""
    return str(app.screen.query_one("#now-tok").value), text(app, "#now-text")


def _figure_line(lines: str) -> str:
    """The "commit ... step ...ms" line of the readout (the first says how old it is)."""
    return next((ln for ln in lines.splitlines() if ln.startswith("commit")), "")


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

        sample, expected = await _one_window(pilot, tier)
        assert sample.commit_len == pytest.approx(expected.commit_len)
        assert sample.step_time_s == pytest.approx(expected.step_time_s)
        assert sample.tok_s == pytest.approx(expected.commit_len / expected.step_time_s)

        # the readout shows the newest figures of the series (a log line may follow)
        def shown() -> bool:
            big, lines = now_lines(now_figures(app.live_samples), time.time())
            return _readout(app)[0] == big and _figure_line(_readout(app)[1]) == (
                _figure_line(str(lines))
            )

        await wait_for(pilot, "the readout", shown, 20)
        big, readout = _readout(app)
        figures = now_figures(app.live_samples)
        assert f"commit {figures.commit:.2f}  step {figures.step_ms:.1f}ms" in readout
        assert big == f"{figures.tok_s:.1f}"
        print(f"TUI now: {big} tok/s, {_figure_line(readout)}; vLLM's window: commit "
              f"1 + Δaccepted/Δdrafts = {expected.commit_len:.2f}, step ΔITL sum/count = "
              f"{expected.step_time_s * 1e3:.2f} ms")  # fmt: skip

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
        await pilot.pause(3)  # the new server's first scrape
        sample, expected = await _one_window(pilot, tier)
        assert sample.commit_len == pytest.approx(expected.commit_len) and sample.commit_len <= 8
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
          f"/ {drafts:.0f} rounds), live commit {sample.commit_len:.2f} <= 8")  # fmt: skip


def test_stop_ends_the_server(vllm_tier: Tier) -> None:
    vllm_tier.stop()
    assert vllm_tier.json("status", vllm_tier.name)["state"] == "stopped"
    with pytest.raises(httpx.ConnectError):
        httpx.get(vllm_tier.url("/health"), timeout=5)
