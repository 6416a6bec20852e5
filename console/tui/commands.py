"""The command palette (ctrl+p or `:`): every view, every engine action, the actions of
the view it was opened from, and every theme.

One place to find everything without knowing its key; each entry runs the same action
its key binding runs, so the palette can never drift from the keys. A view's actions
(run prompt, run sweep, verdict, export, compare, apply...) are listed only while they
can run (the view's `can_run`), so the list is also an answer to "what can I do now?".
Every other view's actions are listed too (once a host is open), named with their view:
choosing one switches to that view and runs it there, or says why it cannot run yet.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.actions import parse
from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from console.tui import keys

Entry = tuple[str, str, Callable[[], object]]


def view_titles() -> dict[str, str]:
    """Each view's mode name -> its title ("sweeps" -> "Sweeps"), in the keys' order."""
    out: dict[str, str] = {}
    for spec in keys.KEYS:
        _, name, params = parse(spec.action)
        if spec.scope == "app" and name == "view" and params:
            out[str(params[0])] = spec.description
    return out


def built_view(app: App, mode: str) -> Screen | None:
    """The view of `mode` if it was built already (Textual builds a mode's screen the
    first time it is shown; the palette never builds one only to list its actions)."""
    stack = getattr(app, "_screen_stacks", {}).get(mode)
    return stack[0] if stack else None


async def run_in_view(app: App, mode: str, spec: keys.KeySpec) -> None:
    """Switch to `mode`'s view and run `spec`'s action there, as its keys would."""
    if getattr(app, "service", None) is None:
        await app.run_action(f"app.view('{mode}')")  # which says to pick a host first
        return
    await app.switch_mode(mode)  # as the view's key does, awaited: built and mounted
    screen = app.screen
    _, name, params = parse(spec.action)
    can_run = getattr(screen, "can_run", None)
    if can_run is not None and not can_run(name, params):
        app.notify(f"{spec.description} cannot run on this view now.", severity="warning")
        return
    await screen.run_action(spec.action)


class ConsoleCommands(Provider):
    def _view_entries(self) -> list[Entry]:
        """This view's runnable actions, then (with a host open) every other view's."""
        app, screen = self.app, self.screen
        keymap = getattr(app, "keymap", {})
        here = getattr(screen, "KEY_SCOPE", "")
        connected = getattr(app, "service", None) is not None
        out: list[Entry] = []
        for mode, title in view_titles().items():
            if mode != here and not connected:
                continue
            view = screen if mode == here else built_view(app, mode)
            can_run = getattr(view, "can_run", None)
            for spec in keys.view_actions(mode):
                _, name, params = parse(spec.action)
                if can_run is not None and not can_run(name, params):
                    continue
                where = "this view" if mode == here else f"{title} view"
                if spec.keys:
                    where += f", key {keys.display_keys(spec, keymap)}"
                run = (
                    partial(app.call_later, screen.run_action, spec.action)
                    if mode == here
                    else partial(app.call_later, run_in_view, app, mode, spec)
                )
                out.append((spec.description, where, run))
        return out

    def _entries(self) -> list[Entry]:
        app = self.app
        keymap = getattr(app, "keymap", {})
        out = self._view_entries()
        connected = getattr(app, "service", None) is not None
        for spec in keys.KEYS:
            if spec.scope != "app" or spec.action == "app.command_palette":
                continue
            _, name, params = parse(spec.action)
            if not connected and not app.check_action(name, params):
                continue  # no views or engine actions before a host is picked
            shown = keys.display_keys(spec, keymap)
            out.append(
                (
                    spec.description,
                    f"key {shown}",
                    partial(app.call_later, app.run_action, spec.action),
                )
            )
        for name in sorted(app.available_themes):
            out.append(
                (f"Theme: {name}", "remembered for next time", partial(setattr, app, "theme", name))
            )
        return out

    async def discover(self) -> Hits:
        for name, help_text, callback in self._entries():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._entries():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
