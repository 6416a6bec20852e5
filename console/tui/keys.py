"""Every key binding of the console as data: id, default keys, action, scope, text.

Bindings are declared here once, so the screens, the `?` keys screen, the palette and
the remap check all read the same table (harlequin keeps its keymap as data for the
same reason). Users remap by id in the `[keys]` table of `<config dir>/tui.toml`:

    [keys]
    dashboard = "1"
    logs-save = "ctrl+e,E"

Defaults avoid keys that tmux, screen or the terminal itself take (ctrl+s/ctrl+q flow
control on some terminals, ctrl+j = newline, ctrl+o, the tmux prefix ctrl+b): views are
single letters as in k9s, actions that restart or stop the engine are capital letters.

In a browser (`specconsole web`) the browser takes some ctrl keys before the page sees
them (ctrl+t opens a tab, ctrl+r reloads, ctrl+l is the address bar, ctrl+w closes,
ctrl+n opens a window), so each binding on such a key has a browser-safe `web`
alternative that replaces it there: a plain letter, which (like every letter key) works
whenever no text field is being edited (Escape leaves one). The footer, the Keys screen,
the palette and the buttons show whichever key is in force.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from console.errors import ConfigError

# Keys a default must never use.
RESERVED = frozenset({"ctrl+s", "ctrl+j", "ctrl+o", "ctrl+b", "ctrl+a", "ctrl+z"})
# Keys a browser keeps for itself (or acts on before the page can refuse them).
BROWSER_KEYS = frozenset(
    {"ctrl+t", "ctrl+r", "ctrl+l", "ctrl+w", "ctrl+n", "ctrl+d", "ctrl+f", "ctrl+h", "f5"}
)


@dataclass(frozen=True)
class KeySpec:
    id: str
    keys: str  # default, comma-separated
    action: str
    description: str
    scope: str  # "app" or a screen name
    show: bool = True  # in the footer
    web: str = ""  # the browser-safe keys that replace `keys` in web mode, if they clash
    # handled by the app before the focused widget sees it: ctrl keys no field types, and
    # the field keys (tab, shift+tab, Escape), which step aside outside a text field
    priority: bool = False
    palette: bool = False  # a view action the command palette lists
    doc_only: bool = False  # a key a widget handles itself, listed on the Keys screen only


KEYS: tuple[KeySpec, ...] = (
    # views (one key each)
    KeySpec("dashboard", "d", "app.view('dashboard')", "Dashboard", "app"),
    KeySpec("service", "s", "app.view('service')", "Service", "app"),
    KeySpec("logs", "l", "app.view('logs')", "Logs", "app"),
    KeySpec("flags", "f", "app.view('flags')", "Flags", "app"),
    KeySpec("prompt-lab", "p", "app.view('prompt')", "Prompt lab", "app"),
    KeySpec("sweeps", "w", "app.view('sweeps')", "Sweeps", "app"),
    KeySpec("history", "h", "app.view('history')", "History", "app"),
    # the footer shows it in place of the view keys when they do not all fit
    KeySpec("views", "g", "app.views", "Views", "app", show=False),
    # engine actions
    KeySpec("start", "S", "app.start", "Start engine", "app", show=False),
    KeySpec("restart", "R", "app.restart", "Restart engine", "app", show=False),
    KeySpec("stop", "X", "app.stop", "Stop engine", "app", show=False),
    KeySpec("rollback", "B", "app.rollback", "Roll back flags", "app", show=False),
    KeySpec("calibrate", "K", "app.calibrate", "Calibrate the host's noise", "app", show=False),
    KeySpec("doctor", "D", "app.doctor", "Doctor: check the host", "app", show=False),
    KeySpec("cancel", "C", "app.cancel", "Cancel running action", "app", show=False),
    KeySpec("sampling", "M", "app.sampling", "Sampling for this session's measurements",
            "app", show=False),
    # app
    KeySpec("keys", "question_mark", "app.keys", "Keys", "app"),
    # ctrl+p is Textual's own palette key; binding `:` as well would make Textual drop
    # its ctrl+p, so both are ours. ctrl+p is priority (no field types it); `:` is not,
    # so a typed prompt can still contain a colon.
    KeySpec("palette", "ctrl+p", "app.command_palette", "Commands", "app", show=False,
            priority=True),
    KeySpec("palette-colon", "colon", "app.command_palette", "Commands", "app", show=False),
    KeySpec("theme-next", "T", "app.next_theme", "Next theme", "app", show=False),
    KeySpec("quit", "q", "app.quit_console", "Quit", "app"),
    # In a text field these move the focus before the next key is delivered, so keys
    # typed right after them land in the field they go to (field_keys.py says why).
    KeySpec("next-field", "tab", "app.next_field", "Next field", "app", show=False,
            priority=True),
    KeySpec("previous-field", "shift+tab", "app.previous_field", "Previous field", "app",
            show=False, priority=True),
    KeySpec("leave-field", "escape", "app.leave_field", "Leave field", "app", show=False,
            priority=True),
    # dashboard
    KeySpec("dashboard-window", "t", "widen", "Widen charts", "dashboard", palette=True),
    # logs
    KeySpec("logs-filter", "slash", "focus_filter", "Filter", "logs"),
    KeySpec("logs-exclude", "exclamation_mark", "focus_exclude", "Exclude", "logs"),
    KeySpec("logs-pause", "space", "toggle_pause", "Pause/follow", "logs"),
    KeySpec("logs-follow", "G,end", "follow", "Follow", "logs", show=False),
    KeySpec("logs-wrap", "W", "toggle_wrap", "Wrap", "logs", palette=True),
    KeySpec("logs-save", "E", "save", "Save log", "logs", palette=True),
    KeySpec("logs-back", "escape", "back_to_log", "Back to log", "logs", show=False),
    # flags
    KeySpec("flags-search", "slash", "focus_search", "Search", "flags"),
    KeySpec("flags-edit", "enter", "", "Edit the selected flag / stage the typed value",
            "flags", doc_only=True),
    KeySpec("flags-apply", "a", "review", "Review & apply", "flags", palette=True),
    KeySpec("flags-discard", "z", "discard", "Discard edits", "flags", palette=True),
    KeySpec("flags-all", "A", "toggle_all", "All flags", "flags", palette=True),
    KeySpec("flags-back", "escape", "back_to_table", "Back to list", "flags", show=False),
    # prompt lab
    KeySpec("prompt-run", "ctrl+r", "run_prompt", "Run prompt", "prompt", web="r",
            palette=True),
    KeySpec("prompt-back", "escape", "leave_field", "Leave field", "prompt", show=False),
    # sweeps and verdict
    KeySpec("sweep-run", "ctrl+r", "run_sweep", "Run sweep", "sweeps", web="r",
            palette=True),
    KeySpec("sweep-explain", "ctrl+t", "explain", "Verdict", "sweeps", web="v",
            palette=True),
    KeySpec("sweep-live", "ctrl+l", "use_live", "Observed from live", "sweeps", web="o",
            palette=True),
    KeySpec("sweep-breakeven", "b", "breakeven", "Break-even", "sweeps", palette=True),
    KeySpec("sweep-settle", "e", "settle", "Settle the verdict", "sweeps", show=False,
            palette=True),
    # palette entries only (no key)
    KeySpec("sweep-twopoint", "", "run_method('two-point')", "Two-point decode rate",
            "sweeps", palette=True),
    KeySpec("sweep-streamcheck", "", "run_method('stream check')", "Stream check", "sweeps",
            palette=True),
    KeySpec("sweep-load", "", "load", "Speculation under load (concurrency 1-8)", "sweeps",
            palette=True),
    KeySpec("sweep-back", "escape", "leave_field", "Leave field", "sweeps", show=False),
    # history
    KeySpec("history-filter", "slash", "focus_filter", "Filter", "history"),
    KeySpec("history-open", "enter", "", "Show the selected run", "history", doc_only=True),
    KeySpec("history-mark", "space", "mark", "Mark", "history"),
    KeySpec("history-compare", "c", "compare", "Compare marked", "history", palette=True),
    KeySpec("history-explain", "v", "explain", "Explain marked", "history", palette=True),
    KeySpec("history-csv", "E", "export('csv')", "Export CSV", "history", palette=True),
    KeySpec("history-json", "J", "export('json')", "Export JSON", "history", palette=True),
    KeySpec("history-reload", "ctrl+r", "reload", "Reload", "history", show=False, web="r",
            palette=True),
    KeySpec("history-back", "escape", "leave_field", "Back to list", "history", show=False),
    # modals
    KeySpec("confirm-yes", "y", "answer(True)", "Yes", "confirm"),
    KeySpec("confirm-no", "n,escape", "answer(False)", "No", "confirm"),
    KeySpec("info-close", "escape,enter", "close", "Close", "info"),
    KeySpec("sampling-cancel", "escape", "cancel", "Cancel", "sampling"),
    KeySpec("hostkey-refuse", "escape", "refuse", "Refuse the key", "host key"),
    KeySpec("keys-close", "escape,question_mark,q", "app.pop_screen", "Close", "keys"),
    KeySpec("views-close", "escape,g", "close", "Close", "views"),
)  # fmt: skip

BY_ID = {spec.id: spec for spec in KEYS}


def bindings(scope: str) -> list[Binding]:
    return [
        Binding(s.keys, s.action, s.description, show=s.show, id=s.id, priority=s.priority)
        for s in KEYS
        if s.scope == scope and not s.doc_only and s.keys
    ]


def web_keymap() -> dict[str, str]:
    """The browser-safe keys by id: what a browser session binds instead of the defaults."""
    return {s.id: s.web for s in KEYS if s.web}


def view_actions(scope: str) -> list[KeySpec]:
    """The actions of one view that the command palette lists."""
    return [s for s in KEYS if s.scope == scope and s.palette]


def check_keymap(keymap: dict[str, str]) -> dict[str, str]:
    """Refuse remaps of ids that do not exist, naming the nearest real one."""
    import difflib

    for key_id, keys in keymap.items():
        if key_id not in BY_ID:
            near = difflib.get_close_matches(key_id, list(BY_ID), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(
                f"[keys] in tui.toml names no binding {key_id!r}{hint}; `?` in the "
                "console lists the ids."
            )
        if not keys.strip():
            raise ConfigError(f"[keys] {key_id} in tui.toml is empty; give a key or remove it.")
    return keymap


def display_keys(spec: KeySpec, keymap: dict[str, str]) -> str:
    names = {"question_mark": "?", "colon": ":", "slash": "/", "exclamation_mark": "!",
             "enter": "Enter", "escape": "Esc", "space": "space"}  # fmt: skip
    keys = keymap.get(spec.id, spec.keys)
    return ", ".join(names.get(k.strip(), k.strip()) for k in keys.split(","))
