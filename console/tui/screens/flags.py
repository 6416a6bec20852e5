"""`f`: the engine's flags as a form, checked as you type, applied with a diff.

The schema is the engine's own (`service.schema()`: types, choices, defaults, help and
curated notes); a value is checked by `service.plan(...)`, the same validation that
`specconsole set` runs, so the form and the CLI refuse the same things with the same
sentence. Staged edits are applied together after the diff is confirmed: write, restart,
follow to ready (`service.apply`), optionally with the same short baseline run before
and after and the two lined up (`measure.baseline`, as `specconsole set --baseline`);
`B` rolls back to the last-good flags. The diff and the apply are requests to the app
(`PlanFlags`, `ConfirmAndRun` + `ApplyFlags`), answered with `FlagsPlanned`/`FlagsApplied`.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.suggester import SuggestFromList
from textual.widgets import Button, DataTable, Input, Static

from console.backends.schema import FlagSpec
from console.config import FlagValue
from console.errors import ConsoleError
from console.service.flag_view import FlagRow, FlagView, kind_text, read_flag_view, value_text
from console.tui import keys
from console.tui.messages import ApplyFlags, ConfirmAndRun, FlagsApplied, FlagsPlanned, PlanFlags
from console.tui.screens.base import ViewScreen
from console.tui.screens.flags_baseline import compose_settings, read_settings, wants_baseline
from console.tui.screens.flags_check import FlagChecks
from console.tui.state import watch_config, watch_state
from console.tui.widgets.fitted_table import Col, FittedTable
from console.tui.widgets.flag_title import FlagTitle
from console.tui.widgets.text_field import TextField
from console.tui.widgets.tick_box import TickBox
from console.tui.widgets.word_wrap import WrappedText

# Values are never cut; the name is shown whole where the row has room: the type and
# default (the editor panel shows both) give way first, then the name takes an ellipsis.
FLAG_COLUMNS = (
    # The name whole first (four rows read `speculative-d…` at 88 columns); a long value
    # (a path) gives way with "…", whole in the flag panel; a number is never that long.
    Col("flag", flex=True, min_width=14, first=True),
    Col("value", flex=True, min_width=9),
    # never cut; dropped whole before a name would be cut (the panel says where from)
    Col("from", optional=True, yields=True),
    Col("type", flex=True, min_width=4, yields=True),  # both shown whole in the panel
    Col("default", flex=True, min_width=7, yields=True),
)


def matches(spec: FlagSpec, query: str) -> bool:
    q = query.lower().strip()
    return not q or q in spec.name or q in spec.help.lower() or q in spec.note.lower()


def shown_value(row: FlagRow | None, current: FlagValue | None) -> tuple[str, str]:
    """(value, where it comes from) for the table: the launch config's value, with what
    the engine reports beside it when the two differ; else the engine's own effective
    value (block size, budget, context length it chose itself); else the default. Never
    an empty "-" for a value some source knows."""
    if row is None:
        return value_text(current), "launch config" if current is not None else ""
    if row.current is not None:
        text = value_text(row.current)
        if row.differs:
            return f"{text} (engine: {value_text(row.effective)})", "launch config"
        return text, "engine" if row.effective is not None else "launch config"
    if row.effective is not None:
        return value_text(row.effective), "engine"
    return "", "default"


class FlagsScreen(FlagChecks, ViewScreen):
    BINDINGS = keys.bindings("flags")
    KEY_SCOPE = "flags"
    HOME = "#flag-table"

    def compose_body(self) -> ComposeResult:
        yield TextField(placeholder="/ search flags", id="flag-search")
        with Horizontal(id="flag-main"):
            yield FittedTable(FLAG_COLUMNS, id="flag-table", cursor_type="row", zebra_stripes=True)
            with Vertical(id="flag-editor", classes="panel"):
                yield FlagTitle(id="flag-title")
                yield WrappedText("", id="flag-help")
                yield TextField(placeholder="new value (blank: default)", id="flag-value")
                yield Static("", id="flag-check")
        with Vertical(id="flag-pending", classes="panel"):
            # The edits scroll; the buttons and baseline settings below stay in view.
            with VerticalScroll(id="pending-scroll"):
                yield Static("No staged edits. Select a flag, type a value, Enter stages it.",
                             id="pending-text")  # fmt: skip
            with Horizontal(id="flag-actions", classes="action-row"):
                # Enter in the value box, for the mouse: stage the typed value.
                yield Button("Stage", id="flag-stage-button", compact=True)
                yield Button("Review & apply", id="flag-apply-button", variant="primary",
                             compact=True)  # fmt: skip
                yield Button("Discard", id="flag-discard-button", compact=True)
                # The tuning loop: the same short baseline before and after the restart.
                yield TickBox("before/after",
                              id="flag-baseline")  # fmt: skip
            yield from compose_settings()

    def on_mount(self) -> None:
        self.specs: dict[str, FlagSpec] = {}
        self.current: dict[str, FlagValue] = {}
        self.staged: dict[str, str | None] = {}
        self.show_all = False
        self.selected: str | None = None
        self._loaded = ""  # what the value box was last loaded with (not typed)
        self.query_one("#flag-editor").border_title = "flag"
        self.query_one("#flag-pending").border_title = "staged edits"
        for button_id, key_id, label in (
            ("flag-stage-button", "flags-edit", "Stage"),
            ("flag-apply-button", "flags-apply", "Review & apply"),
            ("flag-discard-button", "flags-discard", "Discard"),
        ):
            self.query_one(f"#{button_id}", Button).label = f"{label} ({self.key_for(key_id)})"
        self.view: FlagView | None = None
        watch_state(self, "lifecycle", self._maybe_reload)
        # The engine's reported values arrive after it is ready; show them when they do.
        watch_state(self, "server_info", lambda _=None: self._load())
        # An action (apply, rollback, start) ending changes what is current even when no
        # lifecycle event reached this screen while it ran.
        watch_state(self, "running", lambda running: None if running else self._load())
        # A `specconsole set` or `rollback` from another shell writes a new launch config:
        # the polled status carries it, so the table follows without a key press.
        watch_config(self, self._load)
        self.query_one("#flag-table", DataTable).focus()
        self._load()

    # -- data ---------------------------------------------------------------------

    def _maybe_reload(self, event) -> None:
        if event is not None and event.state in ("ready", "failed"):
            self._load()

    @work(group="flags-load", exclusive=True, exit_on_error=False, description="flags")
    async def _load(self) -> None:
        service = self.session.service
        if service is None:
            return
        try:
            view = await read_flag_view(service, info=self.session.server_info, ask_engine=False)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self.view = view
        self.specs = {row.name: row.spec for row in view.rows if row.spec is not None}
        self.current = dict(view.current)
        self.source = view.source
        self._fill_table()

    def _rows(self) -> list[FlagSpec]:
        query = self.query_one("#flag-search", Input).value
        return [
            s
            for s in self.specs.values()
            if (self.show_all or s.tuned or s.name in self.current or s.name in self.staged)
            and matches(s, query)
        ]

    def _fill_table(self) -> None:
        table = self.query_one("#flag-table", FittedTable)
        keep = self.selected
        rows = []
        for spec in self._rows():
            row = self.view.row(spec.name) if self.view is not None else None
            value, source = shown_value(row, self.current.get(spec.name))
            if spec.name in self.staged:
                new = self.staged[spec.name]
                value = f"{value or '-'} → {new if new is not None else '(default)'}"
            rows.append(
                (
                    (spec.name, value or "-", source, kind_text(spec), spec.default or "-"),
                    spec.name,
                )
            )
        table.set_rows(rows)
        table.border_title = (
            f"{'all' if self.show_all else 'tuned and set'} flags ({table.row_count})"
        )
        if keep is not None and keep in [s.name for s in self._rows()]:
            table.move_cursor(row=table.get_row_index(keep))
        elif table.row_count:
            self._select(str(table.coordinate_to_cell_key((0, 0)).row_key.value))
        self._show_pending()

    # -- selection and editing ----------------------------------------------------

    @on(DataTable.RowHighlighted, "#flag-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self._select(str(event.row_key.value))

    @on(DataTable.RowSelected, "#flag-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        self.query_one("#flag-value", Input).focus()

    def _select(self, name: str) -> None:
        if name == self.selected or name not in self.specs:
            return
        self.selected = name
        spec = self.specs[name]
        self.query_one("#flag-title", FlagTitle).flag = spec.name
        text = Text()
        text.append(f"type {kind_text(spec)}, default {spec.default or '-'}\n")
        if spec.choices:
            text.append(f"choices: {', '.join(spec.choices)} (→ completes)\n")
        current = value_text(self.current.get(name))
        text.append(f"current {current or '(engine default)'}")
        row = self.view.row(name) if self.view is not None else None
        if row is not None and row.effective is not None and (not current or row.differs):
            text.append(f", engine reports {value_text(row.effective)}")
        text.append("\n\n")
        if spec.note:
            text.append(spec.note + "\n\n", style="italic")
        text.append(spec.help or "(no help text)")
        self.query_one("#flag-help", WrappedText).update(text)
        value = self.staged.get(name, current) if name in self.staged else current
        box = self.query_one("#flag-value", Input)
        options = list(spec.choices or ()) or (["true", "false"] if spec.type == "bool" else [])
        # Choices complete inline (→ accepts), as a shell completes a flag's values.
        box.suggester = SuggestFromList(options, case_sensitive=False) if options else None
        if box.has_focus and box.value != self._loaded:
            # Typed before this highlight was handled (a click on the row, then on the box
            # and typing at once, reach the box before the screen sees the row change):
            # the typed text is for this flag; check it rather than load over it.
            self._check(self._change_for(name, box.value), stage=None)
            return
        with box.prevent(Input.Changed):
            box.value = value or ""
        self._loaded = box.value
        self.query_one("#flag-check", Static).update("")

    def _change_for(self, name: str, value: str) -> dict[str, str | None]:
        return {**self.staged, name: value.strip() or None}

    @on(Input.Changed, "#flag-value")
    def _typed(self, event: Input.Changed) -> None:
        if self.selected is not None:
            self._check(self._change_for(self.selected, event.value), stage=None)

    @on(Input.Submitted, "#flag-value")
    def _submitted(self, event: Input.Submitted) -> None:
        self.stage_typed(event.value)

    @on(Button.Pressed, "#flag-stage-button")
    def _stage_pressed(self) -> None:
        # Read the box once it has handled the keys already sent to it: a click right
        # after typing reaches the button before the box has typed them all.
        box = self.query_one("#flag-value", Input)
        box.call_later(lambda: self.stage_typed(box.value))

    def _show_pending(self) -> None:
        text = self.query_one("#pending-text", Static)
        if not self.staged:
            text.update("No staged edits. Select a flag, type a value, Enter stages it.")
            return
        lines = [
            f"--{name} = {value if value is not None else '(engine default)'}"
            for name, value in self.staged.items()
        ]
        text.update("\n".join(lines))

    # -- actions ------------------------------------------------------------------

    def can_run(self, action: str, params: tuple[object, ...] = ()) -> bool:
        if action in ("review", "discard"):
            return bool(self.staged) and not (action == "review" and self.session.running)
        return True

    @on(Button.Pressed, "#flag-apply-button")
    def _apply_pressed(self) -> None:
        self.action_review()

    @on(Button.Pressed, "#flag-discard-button")
    def _discard_pressed(self) -> None:
        self.action_discard()

    def action_focus_search(self) -> None:
        self.query_one("#flag-search", Input).focus()

    def action_back_to_table(self) -> None:
        self.query_one("#flag-table", DataTable).focus()

    @on(Input.Changed, "#flag-search")
    def _search(self) -> None:
        self._fill_table()

    @on(Input.Submitted, "#flag-search")
    def _search_done(self) -> None:
        self.query_one("#flag-table", DataTable).focus()

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all
        self._fill_table()

    def action_discard(self) -> None:
        self.staged.clear()
        self._fill_table()
        self.notify("Staged edits discarded.")

    def action_review(self) -> None:
        if not self.staged:
            self.notify("Nothing staged: select a flag, type a value and press Enter.")
            return
        self.request(PlanFlags(dict(self.staged)))

    def on_flags_planned(self, message: FlagsPlanned) -> None:
        plan = message.plan
        if not plan.changed:
            self.notify("No change: the flags already have these values.")
            return
        try:
            options = read_settings(self)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        baseline = self.query_one("#flag-baseline", TickBox).value or wants_baseline(options)
        self.leave_form()  # C must cancel the apply, not type into the value box
        question = f"Apply and restart {self.session.host}?"
        if baseline:
            question += f" (with a baseline, order {options['order']})"
        apply = ApplyFlags(plan, baseline=baseline, options=options if baseline else None)
        self.request(ConfirmAndRun(question, plan.diff, apply, diff=True))

    def on_flags_applied(self, message: FlagsApplied) -> None:
        if message.ok:
            self.staged.clear()
        self._load()
