"""The views' screens, each imported the first time its view is shown.

Textual builds a mode's screen on its first `switch_mode`; building it from a function
lets the import wait too, so the first frame (the host picker, or the dashboard of a
given host) does not import the Sweeps, History, Flags or Prompt lab views and what
they use (the verdict's analysis, the experiments, plotext for charts)."""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen


def dashboard() -> Screen:
    from console.tui.screens.dashboard import DashboardScreen

    return DashboardScreen()


def service() -> Screen:
    from console.tui.screens.service import ServiceScreen

    return ServiceScreen()


def logs() -> Screen:
    from console.tui.screens.logs import LogsScreen

    return LogsScreen()


def flags() -> Screen:
    from console.tui.screens.flags import FlagsScreen

    return FlagsScreen()


def prompt() -> Screen:
    from console.tui.screens.prompt_lab import PromptLabScreen

    return PromptLabScreen()


def sweeps() -> Screen:
    from console.tui.screens.sweeps import SweepsScreen

    return SweepsScreen()


def history() -> Screen:
    from console.tui.screens.history import HistoryScreen

    return HistoryScreen()


MODES: dict[str, Callable[[], Screen]] = {
    "dashboard": dashboard, "service": service, "logs": logs, "flags": flags,
    "prompt": prompt, "sweeps": sweeps, "history": history,
}  # fmt: skip
