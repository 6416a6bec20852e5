"""The command palette (ctrl+p or `:`): every view, every engine action and every theme.

One place to find everything without knowing its key; each entry runs the same app
action its key binding runs, so the palette can never drift from the keys.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.tui import keys


class ConsoleCommands(Provider):
    def _entries(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = self.app
        keymap = getattr(app, "keymap", {})
        out: list[tuple[str, str, Callable[[], object]]] = []
        for spec in keys.KEYS:
            if spec.scope != "app" or spec.id == "palette":
                continue
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
