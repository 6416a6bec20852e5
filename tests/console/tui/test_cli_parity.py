"""Every measurement the CLI offers has a TUI palette entry with the same options.

Walks `specconsole`'s parser (console.cli.build_parser): a command measures when it
takes `--repeat` (prompt, sweep, twopoint, streamcheck, diagnose, breakeven, set's
baseline, and any added later). Each must be in console/tui/cli_parity.py with a
palette entry of its view, and each of its options must have a field of that view
that exists on screen, or a reason the TUI needs none. A CLI command or option added
without a TUI place fails here, naming it.
"""

from __future__ import annotations

import argparse

import pytest

from console.cli import build_parser
from console.tui import keys
from console.tui.cli_parity import ENTRIES, HOST_ACTIONS, NOT_YET, SESSION_OPTIONS
from tests.console.tui import fakes, views

MODE_SCOPE = {"prompt": "prompt", "sweeps": "sweeps", "flags": "flags"}


def _commands() -> dict[str, list[str]]:
    """Top-level commands (bench's are benchmarks of the tool) and their option dests."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, command in sub.choices.items():
        skip = (argparse._HelpAction, argparse._SubParsersAction)
        dests = [a.dest for a in command._actions if not isinstance(a, skip)]
        if "repeat" in dests:
            out[name] = dests
    return out


MEASURING = _commands()


def test_nothing_is_left_for_later() -> None:
    # Every option of every measuring command has its TUI place; the list of gaps is empty.
    assert NOT_YET == {}


def test_the_walk_finds_the_measurement_commands() -> None:
    # The rule must keep catching the known ones, or it would pass by finding none.
    assert {"prompt", "sweep", "twopoint", "streamcheck", "diagnose", "breakeven",
            "set"} <= set(MEASURING)  # fmt: skip


@pytest.mark.parametrize("command", sorted(MEASURING))
def test_each_cli_measurement_has_a_palette_entry_with_its_options(command: str) -> None:
    entry = ENTRIES.get(command)
    assert entry is not None, f"`specconsole {command}` has no TUI entry in cli_parity.py"
    palette = {s.id for s in keys.view_actions(MODE_SCOPE[entry.view])}
    assert entry.key_id in palette, f"{entry.key_id} is not a palette entry of {entry.view}"
    placed = {*entry.options, *SESSION_OPTIONS}
    missing = [d for d in MEASURING[command] if d not in placed]
    assert not missing, f"`specconsole {command}` options with no TUI field: {missing}"


def _options(command: str) -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    skip = (argparse._HelpAction, argparse._SubParsersAction)
    return [a.dest for a in sub.choices[command]._actions if not isinstance(a, skip)]


@pytest.mark.parametrize("command", sorted(HOST_ACTIONS))
def test_each_host_action_of_the_cli_is_an_app_action_of_the_tui(command: str) -> None:
    from console.tui.app import SpecConsoleApp

    spec = keys.BY_ID[HOST_ACTIONS[command]]
    assert spec.scope == "app" and spec.keys, f"{spec.id} is not an app-wide key"
    _, name = spec.action.split(".", 1)
    assert callable(getattr(SpecConsoleApp, f"action_{name}", None)), spec.action
    unplaced = [d for d in _options(command) if d not in SESSION_OPTIONS]
    assert not unplaced, f"`specconsole {command}` options the TUI has no place for: {unplaced}"


@pytest.mark.parametrize("view", sorted({e.view for e in ENTRIES.values()}))
async def test_every_named_field_is_on_its_view(view: str) -> None:
    service = fakes.FakeService()
    app = views.app_for(service)
    key = {"prompt": "p", "sweeps": "w", "flags": "f"}[view]
    async with app.run_test(size=(160, 48)) as pilot:
        await views.ready(pilot, service)
        await pilot.press(key)
        await views.settle(pilot)
        for command, entry in ENTRIES.items():
            if entry.view != view:
                continue
            for dest, where in entry.options.items():
                if not where.startswith("="):
                    assert app.screen.query(where), f"{command} --{dest}: no {where} on {view}"
            # The palette lists it here (the entry's action can run on this view).
            spec = keys.BY_ID[entry.key_id]
            assert spec.scope == MODE_SCOPE[view]


def test_the_sweep_form_reads_as_each_cli_command_does() -> None:
    from console.analysis.repeat_rule import MODEL_PASSAGES
    from console.analysis.sample_size import SampleTarget
    from console.errors import ConsoleError
    from console.tui.screens.sweeps_methods import method_params

    auto = method_params("context", "64,256", "64", "code,prose", "")
    # `sweep` with no --repeat: the default target, on the model's six passages a point
    assert auto["target"] == SampleTarget(passages=MODEL_PASSAGES) and auto["repeat"] == 1
    assert method_params("context", "64", "64", "code", "4")["target"] == SampleTarget.fixed(4)
    assert method_params("two-point", "256", "32,160", "code", "") == {
        "n1": 32, "n2": 160, "context": 256, "text_type": "code", "repeat": 3}  # fmt: skip
    assert method_params("stream check", "256", "128", "prose", "2") == {
        "max_tokens": 128, "context": 256, "text_type": "prose", "repeat": 2}  # fmt: skip
    with pytest.raises(ConsoleError, match="two output lengths"):
        method_params("two-point", "256", "32", "code", "")
    with pytest.raises(ConsoleError, match="one text type"):
        method_params("stream check", "256", "128", "code,prose", "")


def test_break_even_reads_the_sweep_form_as_breakeven_does() -> None:
    from console.errors import ConsoleError
    from console.tui.screens.sweeps_breakeven import breakeven_params

    params = breakeven_params("64,1024", "128", "prose,code", "")
    assert params == {"contexts": [64, 1024], "output_tokens": 128, "text_type": "prose",
                      "repeat": 3}  # fmt: skip
    assert breakeven_params("64", "64", "code", "5")["repeat"] == 5
    with pytest.raises(ConsoleError, match="one output length"):
        breakeven_params("64", "64,128", "code", "")


REPEAT_CASES = [  # (--repeat, --target-rel, --max-repeat) as typed; "" is not given
    ("", "", ""), ("4", "", ""), ("", "0.1", ""), ("", "10%", "6"), ("4", "0.02", "20"),
    ("5", "0", ""), ("", "", "15"), ("12", "0.05", "8"),
]  # fmt: skip


@pytest.mark.parametrize(("repeat", "target", "most"), REPEAT_CASES)
def test_the_sweep_form_and_the_flags_baseline_repeat_as_the_cli_does(
    repeat: str, target: str, most: str
) -> None:
    """`sweep` / `set`'s --repeat, --target-rel, --max-repeat through the CLI's parser and
    `sample_target`, against the same values typed into the sweep form and the Flags
    view's baseline settings: the same SampleTarget (and repeat) every time."""
    from console.commands.measure import sample_target, sweep_target
    from console.tui.screens.flags_baseline import baseline_options
    from console.tui.screens.sweeps_methods import method_params

    argv = ["sweep", "local", "--contexts", "64,256"]
    for flag, value in (("--repeat", repeat), ("--target-rel", target), ("--max-repeat", most)):
        if value:
            argv += [flag, str(float(value[:-1]) / 100) if value.endswith("%") else value]
    args = build_parser().parse_args(argv)
    cli = sample_target(args)
    form = method_params("context", "64,256", "128", "code", repeat, target, most)
    assert form["target"] == sweep_target(args)
    assert form["repeat"] == (args.repeat or 1)  # what cmd_sweep passes as repeat
    options = baseline_options("", "", "", repeat, target, most)
    assert options.get("target", cli if not (repeat or target or most) else None) == cli


def test_a_target_where_the_command_has_none_is_refused_not_ignored() -> None:
    from console.errors import ConsoleError
    from console.tui.screens.sweeps_breakeven import breakeven_params
    from console.tui.screens.sweeps_methods import method_params

    with pytest.raises(ConsoleError, match="fixed count"):
        method_params("two-point", "256", "32,160", "code", "", "5%", "")
    with pytest.raises(ConsoleError, match="fixed count"):
        method_params("output", "256", "32,160", "code", "", "", "12")
    with pytest.raises(ConsoleError, match="fixed count"):
        breakeven_params("64,1024", "128", "code", "", "0.05", "")
    with pytest.raises(ConsoleError, match="a fraction like"):
        method_params("context", "64", "64", "code", "", "five", "")
    with pytest.raises(ConsoleError, match="between 0 and 1"):
        method_params("context", "64", "64", "code", "", "150%", "")
