"""The footer of keys, ordered so that what matters survives a narrow terminal.

Textual's footer lists keys in binding order and cuts the row at the right edge, so at
80 columns the view keys pushed `? Keys  q Quit` off screen. Here help and quit come
first (as htop's F1 Help), then the current view's own actions, then the view keys (the
least needed: the Keys screen and the palette list them too); a key that would not fit
whole is left out rather than cut. Below 100 columns it is compact. While a text field
is edited, `?` and `q` type into it (Textual leaves them out of the footer), so the
footer then leads with Escape, which leaves the field and brings them back.
"""

from __future__ import annotations

from dataclasses import replace

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.tui import keys

ALWAYS = ("keys", "quit")  # binding ids: help and quit
VIEWS_ID = "views"  # the menu of views, shown when the view keys do not all fit


def _rank(binding) -> int:
    if binding.id in ALWAYS or binding.key == "escape":
        return 0
    if binding.action.startswith("app.view"):
        return 2
    return 1


class ViewsKey(FooterKey):
    """The views menu's footer entry: a click runs the menu's action itself, because
    FooterKey's simulated `g` would be typed into a focused text field."""

    def on_mouse_down(self, event: events.MouseDown) -> None:
        event.prevent_default()  # not FooterKey's: it simulates the key

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if self._disabled:
            self.app.bell()
        else:  # on the app's behalf: the menu's answer outlives this key (footers recompose)
            self.app.call_later(self.app.run_action, self.action)


def _views_binding(app) -> tuple | None:
    """The views binding, for a footer whose focused text field hides every printable
    key (its key is not shown there, so the unremapped one serves); None while the app
    refuses the action (no host open)."""
    if not app.check_action("views", ()):
        return None
    binding = next(b for b in keys.bindings("app") if b.id == VIEWS_ID)
    return binding, True, binding.tooltip


class ConsoleFooter(Footer):
    def on_resize(self) -> None:
        self.compact = self.size.width < 100
        self.refresh(recompose=True)

    def _key_width(self, binding, description: str) -> int:
        # A footer key is its key, a space and its description, padded one each side
        # (compact: one space after it).
        key = len(self.app.get_key_display(binding))
        return key + 1 + len(description) + (1 if self.compact else 2)

    def _fit(self, ordered: list[tuple], active, room: int) -> list[tuple]:
        """The keys that fit in `room`, in order; when a view key is left out, `g Views`
        (room kept for it) stands in for them, so a mouse can always reach every view."""
        views = next(((b, e, t) for _n, b, e, t in active.values() if b.id == VIEWS_ID and e), None)
        widths = [self._key_width(item[0], item[0].description) for item in ordered]
        if views is not None and sum(widths) > room:
            room -= self._key_width(views[0], views[0].description)
        else:
            views = None
        shown = []
        full = False
        for item, width in zip(ordered, widths, strict=True):
            if _rank(item[0]) == 0 or (not full and width <= room):
                shown.append(item)  # help and quit are never left out
                room -= width
            else:
                full = True  # keep the order: nothing after a key that did not fit
        dropped_views = any(_rank(i[0]) == 2 for i in ordered if i not in shown)
        if views is not None and dropped_views:
            shown.append(views)
        return shown

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        first: dict[str, tuple] = {}  # one key per action, as Textual's footer shows
        for _node, binding, enabled, tooltip in active.values():
            if binding.show:
                first.setdefault(binding.action, (binding, enabled, tooltip))
        if not any(b.id in ALWAYS for b, _e, _t in first.values()):
            leave = active.get("escape")
            if leave is not None and leave[1].action != "app.pop_screen":
                _node, binding, enabled, tooltip = leave
                binding = replace(binding, description="Leave field (then ? Keys, q Quit)")
                first = {"leave": (binding, enabled, tooltip), **first}
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        room = self.size.width or 10_000  # not laid out yet: everything, fitted on resize
        if palette is not None:
            room -= self._key_width(palette[1], palette[1].description) + 1
        # A focused text field takes the printable keys, the view keys and `g` with them:
        # the views menu is still offered, as a click with no key shown (`g` would type).
        in_field = None
        if not any(_rank(b) == 2 or b.id == VIEWS_ID for b, _e, _t in first.values()):
            in_field = _views_binding(self.app)
            if in_field is not None:
                room -= len(in_field[0].description) + 2
        shown = self._fit(sorted(first.values(), key=lambda item: _rank(item[0])), active, room)
        if in_field is not None:
            shown.append(in_field)
        self.styles.grid_size_columns = len(shown)
        for binding, enabled, tooltip in shown:
            key_class = ViewsKey if binding.id == VIEWS_ID else FooterKey
            yield key_class(
                binding.key,
                "" if in_field and binding is in_field[0] else self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette:
            _node, binding, enabled, tooltip = palette
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                classes="-command-palette",
                disabled=not enabled,
                tooltip=binding.tooltip or binding.description,
            )
