"""One flag change through the TUI, as a command: the stress test's "TUI apply" operation.

    python -m tests.console.service.tui_apply HOST FLAG=VALUE [--wait-lock SECONDS]

opens the console on HOST's saved profile (`App.run_test`, driven by the Pilot as the
TUI tests drive it), changes FLAG in the Flags view (search, select, type, Enter),
reviews (a), confirms the diff (y) and follows the apply until it ends. The TUI waits up
to SECONDS (its `lease_wait_s`; 0: refused at once) for another writer's lease, as
`specconsole set --wait-lock` does.

Exit status, as a CLI command's would read: 0 when the apply ended ready ("applied:
ready") or the value was already current ("no change", as `set` says it); 1 when the
apply failed (refused for another writer's lease, a config changed since the diff, a
failed start: the app's own sentence is printed); 2 when the TUI never got that far.
A subprocess, so that several of them and the CLI's commands can run at once.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from console.tui.app import SpecConsoleApp
from console.tui.screens.modals import ConfirmScreen
from console.tui.settings import TuiSettings
from tests.console.tui.pilot import Stuck, stage_flag, until

NO_CHANGE = "No change: the flags already have these values."


def notes(app: SpecConsoleApp) -> list[str]:
    return [n.message for n in app._notifications]


def ended(app: SpecConsoleApp, shown: int) -> str | None:
    """The apply's last line in the lifecycle log after the first `shown` lines."""
    for line in app.events.lines[shown:]:
        for word in ("apply done", "apply failed", "apply cancelled"):
            if word in line:
                return line.split("  ", 1)[-1]
    return None


async def drive(pilot, name: str, value: str) -> tuple[int, str]:
    app = pilot.app
    await until(pilot, "the first status", lambda: app.status is not None, 180)
    await stage_flag(pilot, name, value)
    await pilot.press("a")
    await until(
        pilot, "the diff", lambda: isinstance(app.screen, ConfirmScreen) or NO_CHANGE in notes(app)
    )
    if not isinstance(app.screen, ConfirmScreen):
        return 0, "no change"
    shown = len(app.events.lines)
    await pilot.press("y")
    await until(pilot, "the apply", lambda: ended(app, shown) is not None and not app.running, 600)
    line = ended(app, shown) or ""
    state = app.status.state if app.status is not None else None
    event = app.lifecycle
    if line == "apply done" and event is not None and event.state == "ready":
        return 0, "applied: ready"
    return 1, f"{line} (lifecycle {event.describe() if event else None}, status {state})"


async def main(host: str, name: str, value: str, wait: float) -> int:
    settings = TuiSettings(status_poll_s=1.0, lease_wait_s=wait, ready_timeout_s=120)
    app = SpecConsoleApp(host, settings=settings, live=False)
    async with app.run_test(size=(130, 42)) as pilot:
        try:
            code, said = await drive(pilot, name, value)
        except Stuck as exc:
            code, said = 2, str(exc)
        print(said)
        if code:
            print("notifications: " + " | ".join(notes(app)))
        await pilot.press("q")
    return code


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("change", help="FLAG=VALUE")
    parser.add_argument("--wait-lock", type=float, default=900.0)
    args = parser.parse_args()
    flag, _, typed = args.change.partition("=")
    sys.exit(asyncio.run(main(args.host, flag, typed, args.wait_lock)))
