"""The flags view's baseline settings: what `specconsole set --baseline` takes.

Contexts, output tokens and text types override the host profile's `[baseline]` table
for this apply (`--baseline-contexts/--baseline-output/--baseline-text`; blank keeps the
profile's); repeat blank is the CLI's default (repeat until each point's interval is
narrow), a number is exactly that many (`--repeat N`), "± target" and "max" are
`--target-rel` and `--max-repeat` (read by the CLI's rule, `analysis.repeat_rule`; "max"
blank is the CLI's default, 10 rounds, and side by side up to 40 while the paired change
is still wide, hence its "auto" placeholder); the
order is `--order`'s (auto: side by side where the host holds both engines, else
A-B-A-B when a restart is cheap, else A-B; `--bracket` is A-B-A-B), and calibrate
unticked is `--no-calibrate`. As on the command line, any override implies the baseline.
The parsed options go to `experiments.baseline.apply_with_baseline` unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Input, Select

from console.analysis.repeat_rule import parse_fraction, repeat_rule
from console.experiments.baseline import ORDERS
from console.numbers import parse_count, parse_counts
from console.tui.widgets.form import inline_field
from console.tui.widgets.tick_box import TickBox

FIELDS = ("#bl-contexts", "#bl-output", "#bl-text", "#bl-repeat", "#bl-target", "#bl-max")


def compose_settings() -> Iterator[Widget]:
    with Horizontal(id="flag-baseline-row", classes="verdict-form"):
        yield from inline_field("ctx", "profile's", "bl-contexts")
        yield from inline_field("out", "96", "bl-output")
        yield from inline_field("text", "code,prose", "bl-text")
    with Horizontal(id="flag-sampling-row", classes="verdict-form"):
        yield from inline_field("repeat", "auto", "bl-repeat")
        yield from inline_field("± target", "5%", "bl-target")
        yield from inline_field("max", "auto", "bl-max")
        yield Select([(o, o) for o in ORDERS], value="auto", allow_blank=False,
                     id="flag-order", prompt="order")  # fmt: skip
        yield TickBox("calibrate", value=True, id="flag-calibrate")


def baseline_options(
    contexts: str,
    output: str,
    text: str,
    repeat: str,
    target: str = "",
    most: str = "",
    order: str = "auto",
    calibrate: bool = True,
) -> dict[str, Any]:
    """The typed settings as `apply_with_baseline` keywords (`overrides`, `target`,
    `order`, `calibrate`); a ConsoleError with one sentence for a bad value."""
    overrides: dict[str, Any] = {}
    if contexts.strip():
        overrides["contexts"] = parse_counts(contexts, "Each baseline context")
    if output.strip():
        overrides["output"] = parse_count(output, "The baseline output")
    types = [t.strip() for t in text.split(",") if t.strip()]
    if types:
        overrides["text_types"] = types
    options: dict[str, Any] = {"overrides": overrides, "order": order, "calibrate": calibrate}
    if repeat.strip() or target.strip() or most.strip():
        options["target"] = repeat_rule(
            parse_count(repeat, "Repeat") if repeat.strip() else None,
            parse_fraction(target, "The ± target"),
            parse_count(most, "Max repeat") if most.strip() else None,
        )
    return options


def wants_baseline(options: dict[str, Any]) -> bool:
    """Whether these settings ask for a baseline on their own (any of them given)."""
    return bool(
        options["overrides"]
        or options["order"] != "auto"
        or not options["calibrate"]
        or "target" in options
    )


def read_settings(screen: Any) -> dict[str, Any]:
    values = [screen.query_one(s, Input).value for s in FIELDS]
    order = screen.query_one("#flag-order", Select).value
    calibrate = screen.query_one("#flag-calibrate", TickBox).value
    return baseline_options(*values, str(order), bool(calibrate))
