"""A text field whose editing keys act in the order they were typed.

Textual hands a key to the focused field, and the field inserts a printable one at
once; a key the field binds (backspace, ctrl+u, delete, the arrows, home, end) is not
handled there but bubbles up, through a queue per widget, to the app, which then runs
the field's binding. The printable keys typed after it are handed to the field directly,
so on a busy event loop they can land first: "C-u 1900" into a field holding
"2048,3072,4096,5120" gave "2048,3072,4096,51201900" and then, when the ctrl+u arrived,
an empty field (a tmux test caught it under load). Here the field runs its own bindings
when the key reaches it, in order with the keys around it. Priority bindings (the app's
tab, escape and palette keys) are handled by the app before any field sees a key, and
are left to it.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

__all__ = ["TextField"]


class TextField(Input):
    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()  # handled: it must not run a second time at the app
                event.prevent_default()
                return
        await super()._on_key(event)
