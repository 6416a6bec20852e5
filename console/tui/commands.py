"""The command palette (ctrl+p or `:`): every view, every engine action, the actions of
the view it was opened from, and every theme.

One place to find everything without knowing its key; each entry runs the same action
its key binding runs, so the palette can never drift from the keys. A view's actions
(run prompt, run sweep, verdict, export, compare, apply...) are listed only while they
can run (the view's `can_run`), so the list is also an answer to "what can I do now?".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.actions import parse
from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.tui import keys


class ConsoleCommands(Provider):
    def _entries(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = self.app
        keymap = getattr(app, "keymap", {})
        out: list[tuple[str, str, Callable[[], object]]] = []
        screen = self.screen
        scope = getattr(screen, "KEY_SCOPE", "")
        can_run = getattr(screen, "can_run", None)
        for spec in keys.view_actions(scope) if scope else ():
            _, name, params = parse(spec.action)
            if can_run is not None and not can_run(name, params):
                continue
            out.append(
                (
                    spec.description,
                    f"this view, key {keys.display_keys(spec, keymap)}"
                    if spec.keys
                    else "this view",
                    partial(app.call_later, screen.run_action, spec.action),
                )
            )
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
