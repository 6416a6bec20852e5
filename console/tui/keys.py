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
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from console.errors import ConfigError

# Keys a default must never use.
RESERVED = frozenset({"ctrl+s", "ctrl+j", "ctrl+o", "ctrl+b", "ctrl+a", "ctrl+z"})


@dataclass(frozen=True)
class KeySpec:
    id: str
    keys: str  # default, comma-separated
    action: str
    description: str
    scope: str  # "app" or a screen name
    show: bool = True  # in the footer


KEYS: tuple[KeySpec, ...] = (
    # views (one key each)
    KeySpec("dashboard", "d", "app.view('dashboard')", "Dashboard", "app"),
    KeySpec("service", "s", "app.view('service')", "Service", "app"),
    KeySpec("logs", "l", "app.view('logs')", "Logs", "app"),
    KeySpec("flags", "f", "app.view('flags')", "Flags", "app"),
    KeySpec("prompt-lab", "p", "app.view('prompt')", "Prompt lab", "app"),
    KeySpec("sweeps", "w", "app.view('sweeps')", "Sweeps", "app"),
    KeySpec("history", "h", "app.view('history')", "History", "app"),
    # engine actions
    KeySpec("start", "S", "app.start", "Start engine", "app", show=False),
    KeySpec("restart", "R", "app.restart", "Restart engine", "app", show=False),
    KeySpec("stop", "X", "app.stop", "Stop engine", "app", show=False),
    KeySpec("rollback", "B", "app.rollback", "Roll back flags", "app", show=False),
    KeySpec("cancel", "C", "app.cancel", "Cancel running action", "app", show=False),
    # app
    KeySpec("keys", "question_mark", "app.keys", "Keys", "app"),
    KeySpec("palette", "colon", "app.command_palette", "Commands", "app", show=False),
    KeySpec("theme-next", "T", "app.next_theme", "Next theme", "app", show=False),
    KeySpec("quit", "q", "app.quit_console", "Quit", "app"),
    # logs
    KeySpec("logs-filter", "slash", "focus_filter", "Filter", "logs"),
    KeySpec("logs-exclude", "exclamation_mark", "focus_exclude", "Exclude", "logs"),
    KeySpec("logs-pause", "space", "toggle_pause", "Pause/follow", "logs"),
    KeySpec("logs-follow", "G,end", "follow", "Follow", "logs", show=False),
    KeySpec("logs-wrap", "W", "toggle_wrap", "Wrap", "logs"),
    KeySpec("logs-save", "E", "save", "Save", "logs"),
    KeySpec("logs-back", "escape", "back_to_log", "Back to log", "logs", show=False),
    # flags
    KeySpec("flags-search", "slash", "focus_search", "Search", "flags"),
    KeySpec("flags-apply", "a", "review", "Review & apply", "flags"),
    KeySpec("flags-discard", "z", "discard", "Discard edits", "flags"),
    KeySpec("flags-all", "A", "toggle_all", "All flags", "flags"),
    KeySpec("flags-back", "escape", "back_to_table", "Back to list", "flags", show=False),
    # prompt lab
    KeySpec("prompt-run", "ctrl+r", "run_prompt", "Run prompt", "prompt"),
    KeySpec("prompt-back", "escape", "leave_field", "Leave field", "prompt", show=False),
    # sweeps and verdict
    KeySpec("sweep-run", "ctrl+r", "run_sweep", "Run sweep", "sweeps"),
    KeySpec("sweep-explain", "ctrl+t", "explain", "Verdict", "sweeps"),
    KeySpec("sweep-live", "ctrl+l", "use_live", "Observed from live", "sweeps"),
    KeySpec("sweep-back", "escape", "leave_field", "Leave field", "sweeps", show=False),
    # history
    KeySpec("history-filter", "slash", "focus_filter", "Filter", "history"),
    KeySpec("history-mark", "space", "mark", "Mark", "history"),
    KeySpec("history-compare", "c", "compare", "Compare marked", "history"),
    KeySpec("history-explain", "v", "explain", "Explain marked", "history"),
    KeySpec("history-csv", "E", "export('csv')", "Export CSV", "history"),
    KeySpec("history-json", "J", "export('json')", "Export JSON", "history"),
    KeySpec("history-reload", "ctrl+r", "reload", "Reload", "history", show=False),
    KeySpec("history-back", "escape", "leave_field", "Back to list", "history", show=False),
    # modals
    KeySpec("confirm-yes", "y", "answer(True)", "Yes", "confirm"),
    KeySpec("confirm-no", "n,escape", "answer(False)", "No", "confirm"),
    KeySpec("info-close", "escape,enter", "close", "Close", "info"),
    KeySpec("hostkey-refuse", "escape", "refuse", "Refuse the key", "host key"),
    KeySpec("keys-close", "escape,question_mark,q", "app.pop_screen", "Close", "keys"),
)

BY_ID = {spec.id: spec for spec in KEYS}


def bindings(scope: str) -> list[Binding]:
    return [
        Binding(s.keys, s.action, s.description, show=s.show, id=s.id)
        for s in KEYS
        if s.scope == scope
    ]


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
    names = {"question_mark": "?", "colon": ":", "slash": "/", "exclamation_mark": "!"}
    keys = keymap.get(spec.id, spec.keys)
    return ", ".join(names.get(k.strip(), k.strip()) for k in keys.split(","))
