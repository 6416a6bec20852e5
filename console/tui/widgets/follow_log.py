"""A log widget that tells its screen when the user scrolls away from the end.

Following must pause the moment someone scrolls up to read (k9s, toolong), and must not
pause because a burst of lines outran a deferred scroll. So the pause comes from the
user's own scroll actions, posted as a message, never from comparing scroll offsets.
A line too wide for the view ends in "…" (LineLog).
"""

from __future__ import annotations

from textual import events
from textual.message import Message

from console.tui.widgets.line_log import LineLog


class FollowLog(LineLog):
    class ScrolledAway(Message):
        """The user scrolled up: stop following."""

    def _away(self) -> None:
        self.post_message(self.ScrolledAway())

    def action_scroll_up(self) -> None:
        self._away()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._away()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._away()
        super().action_scroll_home()

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._away()
        super()._on_mouse_scroll_up(event)
