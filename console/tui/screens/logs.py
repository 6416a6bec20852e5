"""`l`: the engine log, followed live, as an operator reads it (k9s's log view).

- a regex filter and an inverse filter, re-applied to the lines already received;
- following pauses when you scroll up (or press space) and resumes at the end (G);
- a marker line at each restart, so the old run's lines are never mistaken for the new;
- wrap toggle, and save of what is shown to a file.

Lines come from `service.logs(follow=True)`, the same stream `specconsole logs -f`
prints; a dropped link ends the stream and the view reconnects by itself.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, RichLog, Static

from console.service import LifecycleEvent
from console.tui import keys
from console.tui.screens.base import ViewScreen
from console.tui.state import watch_state
from console.tui.widgets.follow_log import FollowLog
from console.tui.widgets.text_field import TextField

MARK = "────"


def compile_filter(text: str) -> re.Pattern[str] | None:
    """The pattern, or None for an empty box; raises re.error for a bad one."""
    return re.compile(text) if text else None


def visible(line: str, include: re.Pattern[str] | None, exclude: re.Pattern[str] | None) -> bool:
    if line.startswith(MARK):
        return True  # restart markers survive every filter
    if include is not None and not include.search(line):
        return False
    return not (exclude is not None and exclude.search(line))


class LogsScreen(ViewScreen):
    BINDINGS = keys.bindings("logs")
    KEY_SCOPE = "logs"
    HOME = "#log"

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="log-filters"):
            yield TextField(placeholder="/ filter (regex)", id="log-filter")
            yield TextField(placeholder="! exclude (regex)", id="log-exclude")
            yield Static("", id="log-state")
        yield FollowLog(id="log", markup=False, highlight=False, wrap=False, auto_scroll=True)

    def on_mount(self) -> None:
        self.lines: deque[str] = deque(maxlen=self.session.settings.log_buffer)
        self.include: re.Pattern[str] | None = None
        self.exclude: re.Pattern[str] | None = None
        self.paused = False
        watch_state(self, "lifecycle", self._on_event)
        self._update_state()
        self.query_one("#log", RichLog).focus()
        self._follow()

    # -- the stream ---------------------------------------------------------------

    @work(group="log-follow", exclusive=True, exit_on_error=False, description="log follow")
    async def _follow(self) -> None:
        service = self.session.service
        if service is None:
            return
        backlog = self.session.settings.log_backlog
        while True:
            try:
                async for line in service.logs(follow=True, lines=backlog):
                    self.add_line(line)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.add_line(f"{MARK} log stream lost ({exc}); reconnecting {MARK}")
            backlog = 0  # after a reconnect, only new lines
            await asyncio.sleep(2.0)

    def _on_event(self, event: LifecycleEvent | None) -> None:
        if event is not None and event.state == "starting":
            stamp = time.strftime("%H:%M:%S", time.localtime(event.at))
            self.add_line(f"{MARK} engine starting at {stamp}: {event.message} {MARK}")

    def add_line(self, line: str) -> None:
        self.lines.append(line)
        if visible(line, self.include, self.exclude):
            self.query_one("#log", FollowLog).write_line(line, scroll_end=not self.paused)
        self._update_state()

    @on(FollowLog.ScrolledAway)
    def _scrolled_away(self) -> None:
        if not self.paused:
            self.paused = True
            self._update_state()

    # -- filters ------------------------------------------------------------------

    @on(Input.Changed, "#log-filter, #log-exclude")
    def _filter_changed(self, event: Input.Changed) -> None:
        try:
            pattern = compile_filter(event.value)
        except re.error as exc:
            event.input.add_class("bad-regex")
            self.query_one("#log-state", Static).update(f"bad regex: {exc}")
            return
        event.input.remove_class("bad-regex")
        if event.input.id == "log-filter":
            self.include = pattern
        else:
            self.exclude = pattern
        self.redraw()

    @on(Input.Submitted)
    def _filter_done(self) -> None:
        self.query_one("#log", RichLog).focus()

    def redraw(self) -> None:
        log = self.query_one("#log", FollowLog)
        log.clear()
        for line in self.lines:
            if visible(line, self.include, self.exclude):
                log.write_line(line, scroll_end=False)
        if not self.paused:
            log.scroll_end(animate=False)
        self._update_state()

    def _update_state(self) -> None:
        shown = sum(1 for ln in self.lines if visible(ln, self.include, self.exclude))
        follow = "paused (G follows)" if self.paused else "following"
        wrap = ", wrap" if self.query_one("#log", RichLog).wrap else ""
        self.query_one("#log-state", Static).update(
            f"{shown}/{len(self.lines)} lines, {follow}{wrap}"
        )

    # -- actions ------------------------------------------------------------------

    def action_focus_filter(self) -> None:
        self.query_one("#log-filter", Input).focus()

    def action_focus_exclude(self) -> None:
        self.query_one("#log-exclude", Input).focus()

    def action_back_to_log(self) -> None:
        self.query_one("#log", RichLog).focus()

    def action_toggle_pause(self) -> None:
        if self.paused:
            self.action_follow()
        else:
            self.paused = True
            self._update_state()

    def action_follow(self) -> None:
        self.paused = False
        self.query_one("#log", RichLog).scroll_end(animate=False)
        self._update_state()

    def action_toggle_wrap(self) -> None:
        log = self.query_one("#log", RichLog)
        log.wrap = not log.wrap
        self.redraw()

    def action_save(self) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = Path.cwd() / f"specconsole-{self.session.host}-{stamp}.log"
        shown = [ln for ln in self.lines if visible(ln, self.include, self.exclude)]
        try:
            path.write_text("\n".join(shown) + ("\n" if shown else ""))
        except OSError as exc:
            self.notify(f"Could not save the log: {exc}.", severity="error")
            return
        self.notify(f"Saved {len(shown)} lines to {path}.")
