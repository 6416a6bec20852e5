"""Settings, key remaps, themes, host resolution and the chart's downsampling: the parts
of the console that are data, tested as data, plus the app honouring them."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import HostProfile, save_profile
from console.errors import ConfigError
from console.hosts import connect_targets, resolve_host, ssh_config_hosts
from console.tui import keys
from console.tui.app import SpecConsoleApp
from console.tui.screens.connect import ConnectScreen
from console.tui.screens.service import ServiceScreen
from console.tui.settings import load_settings, save_theme, settings_path
from console.tui.themes import load_themes, parse_theme
from console.tui.widgets.plotext_render import ChartSeries, downsample, render_lines
from tests.console.tui import fakes


def test_every_binding_has_an_id_and_no_default_clashes_with_tmux_or_the_terminal() -> None:
    ids = [spec.id for spec in keys.KEYS]
    assert len(ids) == len(set(ids))
    for spec in keys.KEYS:
        assert not {k.strip() for k in spec.keys.split(",")} & keys.RESERVED, spec


def test_keymap_remaps_by_id_and_refuses_unknown_ids(tmp_path: Path) -> None:
    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text('theme = "light"\n[keys]\ndashboard = "1"\n')
    settings = load_settings()
    assert settings.keys == {"dashboard": "1"} and settings.theme == "light"
    with pytest.raises(ConfigError, match="did you mean 'dashboard'"):
        keys.check_keymap({"dashbord": "1"})
    settings_path().write_text("[keys]\ndashboard = 1\n")
    with pytest.raises(ConfigError, match=r"keys\.dashboard"):
        load_settings()
    settings_path().write_text("them = 'x'\n")
    with pytest.raises(ConfigError, match="them"):
        load_settings()


async def test_a_remapped_key_works_and_the_keys_screen_shows_it() -> None:
    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text('[keys]\nservice = "2"\n')
    app = SpecConsoleApp("gpu1", service=fakes.FakeService(), poll=False, live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ServiceScreen)
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        table = app.screen.query_one("#keys-table")
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert ["everywhere", "2", "Service", "service"] in [list(r) for r in rows]


def test_shipped_themes_load_and_a_user_theme_is_found(tmp_path: Path) -> None:
    themes = load_themes()
    assert {"dark", "light", "high-contrast"} <= set(themes)
    assert themes["dark"].dark and not themes["light"].dark
    folder = settings_path().parent / "themes"
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text('primary = "#123456"\ndark = true\n')
    assert "mine" in load_themes()
    (folder / "bad.toml").write_text('primary = "#123456"\nshade = 3\n')
    with pytest.raises(ConfigError, match="unknown keys: shade"):
        parse_theme(folder / "bad.toml")


async def test_theme_from_the_command_line_is_used_and_remembered() -> None:
    app = SpecConsoleApp("gpu1", service=fakes.FakeService(), poll=False, live=False,
                         theme="high-contrast")  # fmt: skip
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.theme == "high-contrast"
        await pilot.press("T")  # next theme, also remembered
        await pilot.pause(0.1)
        assert app.theme == "dark"
    assert load_settings().theme == "dark"
    save_theme("light")
    assert load_settings().theme == "light"


def test_hosts_resolve_profiles_ssh_destinations_and_ssh_config_aliases(tmp_path: Path) -> None:
    ssh = Path.home() / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "config").write_text("Host gpu1 gpu2\n  HostName 10.0.0.1\nHost *.internal !x\n")
    assert ssh_config_hosts() == ["gpu1", "gpu2"]
    assert resolve_host("local").name == "local" and resolve_host("local").ssh is None
    p = resolve_host("ops@gpu9:2222")
    assert p.ssh is not None and p.ssh.destination == "ops@gpu9:2222" and p.name == "ops-gpu9-2222"
    assert resolve_host("gpu2").ssh.destination == "gpu2"
    with pytest.raises(ConfigError, match="neither a host profile"):
        resolve_host("nowhere")
    save_profile(HostProfile(name="rack3"))
    targets = [t for t, _ in connect_targets()]
    assert targets == ["local", "rack3", "gpu1", "gpu2"]


async def test_without_a_host_the_picker_lists_targets_and_connects() -> None:
    app = SpecConsoleApp(None, live=False, poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.2)
        assert isinstance(app.screen, ConnectScreen)
        picker = app.screen.query_one("#picker")
        assert picker.option_count >= 1 and picker.get_option_at_index(0).id == "local"
        await pilot.press("enter")
        for _ in range(100):
            if app.service is not None:
                break
            await pilot.pause(0.1)
        assert app.service is not None and app.host == "local"
        # let the dashboard's first reads (the engine's --help) finish before quitting
        for _ in range(300):
            table = app.screen.query("#flags-table")
            if table and table.first().row_count:
                break
            await pilot.pause(0.1)


def test_downsample_keeps_the_shape_and_bounds_the_points() -> None:
    points = [(float(i), float(i % 10)) for i in range(10_000)]
    small = downsample(points, 100)
    assert len(small) == 100
    assert abs(sum(y for _, y in small) / 100 - 4.5) < 0.1
    assert downsample([(1.0, 2.0), (0.0, float("nan"))], 10) == [(1.0, 2.0)]


def test_chart_text_has_the_widget_size_and_says_when_empty() -> None:
    text = render_lines([ChartSeries("tok/s", [(0.0, 1.0), (1.0, 2.0)])], 40, 10, title="t")
    lines = text.plain.split("\n")
    assert len(lines) == 10 and max(len(ln) for ln in lines) == 40
    assert "no data yet" in render_lines([], 40, 10, title="tok/s").plain
    assert render_lines([], 5, 3).plain == ""


async def test_the_palette_offers_views_actions_and_themes() -> None:
    from console.tui.screens.prompt_lab import PromptLabScreen

    app = SpecConsoleApp("gpu1", service=fakes.FakeService(), poll=False, live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("colon", *"Prompt lab")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, PromptLabScreen)
        await pilot.press(
            "ctrl+p",
            *"Theme: high",
        )
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.theme == "high-contrast"


async def test_calibrate_is_in_the_palette_and_asks_before_it_restarts() -> None:
    """`specconsole calibrate` has its TUI entry: the palette finds it by name, and it
    asks first (it restarts the engine twice), then runs the CLI's calibrate."""
    from console.tui.screens.modals import ConfirmScreen

    app = SpecConsoleApp("gpu1", service=fakes.FakeService(), poll=False, live=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("colon", *"Calibrate")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, ConfirmScreen)
        assert "Calibrate gpu1?" in str(app.screen.query_one("#question").render())
        await pilot.press("escape")  # refused: nothing runs
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmScreen) and not app.running
