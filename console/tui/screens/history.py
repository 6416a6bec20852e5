"""`h`: the stored runs — list and filter, look inside one, compare two side by side,
export.

Reads the local run store (`RunStore`, what `specconsole history` reads), so it works
with the host down. The comparison is `store.compare`: runs lined up per (context, text
type) point, medians of unflagged samples, the change per figure, and the flags diff
that says what was changed between them.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, DataTable, Input, Static

from console.analysis import format as fmt
from console.analysis.stats import summarize
from console.errors import ConsoleError
from console.experiments.explain import RunsExplained, explain_runs
from console.store import StoredRun, compare, export_csv, export_json
from console.store.compare import RunComparison
from console.store.compare_text import FIGURE_TEXT, comparison_lines
from console.tui import keys
from console.tui.screens.base import ViewScreen
from console.tui.widgets.fitted_table import Col, FittedTable
from console.tui.widgets.text_field import TextField

RUN_LIMIT = 500
# Ids, times, counts and hashes are never cut; the host gives way with an ellipsis.
RUN_COLUMNS = (Col(""), Col("id"), Col("started"), Col("host", flex=True, min_width=6),
               Col("kind"), Col("method", flex=True, min_width=6),
               Col("status", optional=True), Col("samples", optional=True),
               Col("flags"))  # fmt: skip
CHECK_EVERY_S = 5.0  # while shown: look for runs stored by other processes (the CLI)
BUTTONS = (
    ("hist-mark-button", "history-mark", "Mark", "mark"),  # a mouse marks runs too
    ("hist-compare-button", "history-compare", "Compare", "compare"),
    ("hist-explain-button", "history-explain", "Explain", "explain"),
    ("hist-csv-button", "history-csv", "CSV", "export('csv')"),
    ("hist-json-button", "history-json", "JSON", "export('json')"),
)


def when(t: float | None) -> str:
    return fmt.when(t, seconds=False)  # the runs table's column is minute-wide


def run_cells(run: StoredRun, marked: bool) -> tuple[str, ...]:
    return (
        "●" if marked else "", str(run.id), when(run.info.started_at), run.info.host,
        run.info.kind, run.info.method, run.status, str(run.sample_count), run.info.flags_hash,
    )  # fmt: skip


def matches(run: StoredRun, query: str) -> bool:
    words = query.lower().split()
    hay = " ".join(
        (str(run.id), run.info.host, run.info.method, run.info.kind, run.status,
         run.info.flags_hash)
    ).lower()  # fmt: skip
    return all(w in hay for w in words)


def params_text(params: dict) -> str:
    """A run's parameters as words: `contexts 256,1792; output_tokens 64`."""

    def value(v: object) -> str:
        if isinstance(v, (list, tuple)):
            return ",".join(value(x) for x in v)
        if isinstance(v, dict):
            return " ".join(f"{k}={value(x)}" for k, x in v.items())
        return str(v)

    return "; ".join(f"{k} {value(v)}" for k, v in params.items()) or "(none)"


# A comparison's rows, one per figure per shared point: the change with its interval
# comes before the two runs' figures, so at 80 columns, where "A → B" is dropped whole,
# the finding is still on the row (never wrapped onto two, never cut mid-number).
COMPARE_COLUMNS = (Col("context"), Col("text", flex=True, min_width=5), Col("figure"),
                   Col("change"), Col("A → B", optional=True),
                   Col("n A/B", optional=True))  # fmt: skip


def compare_parts(result: RunComparison) -> tuple[str, list[tuple[tuple, None]], str]:
    """The comparison `specconsole history compare` prints, as (the lines before its
    table, the table's rows, the lines after): the same cells (the same formatters and
    change text), in a table that fits the panel instead of text rows that wrap."""
    lines = comparison_lines(result)
    at = next((i for i, line in enumerate(lines) if line.startswith("CONTEXT")), None)
    if at is None:
        return "\n".join(lines), [], ""
    rows = []
    for point in result.points:
        for pair in point.figures:
            label, figure = FIGURE_TEXT[pair.name]
            a, b = fmt.interval(pair.a_interval, figure), fmt.interval(pair.b_interval, figure)
            rows.append(((str(point.context_tokens), point.text_type, label,
                          pair.change_text(), f"{a} → {b}", f"{point.n_a}/{point.n_b}"),
                         None))  # fmt: skip
    return "\n".join(lines[:at]), rows, "\n".join(lines[at + 1 :])


def explain_text(explained: RunsExplained) -> Text:
    """The verdicts on two runs: the same lines `specconsole history explain` prints, the
    outcome of each in colour."""
    styles = {"physics": "bold green", "not physics": "bold red"}
    text = Text()
    headlines = {j.headline: styles.get(j.outcome, "bold") for _label, j in explained.pairs}
    for line in explained.lines():
        text.append(line + "\n", style=headlines.get(line.strip(), ""))
    return text


def run_text(run: StoredRun) -> Text:
    text = Text()
    text.append(f"run {run.id}: {run.info.method} on {run.info.host}", style="bold")
    text.append(f" ({run.status}), {when(run.info.started_at)}, engine {run.info.engine}, "
                f"flags {run.info.flags_hash}\n")  # fmt: skip
    text.append(f"{run.info.kind}: {params_text(run.info.params)}\n", style="dim")
    points = summarize(run.requests)
    if points:
        # The note on its own line: beside the header it made the header wrap at 80.
        text.append("pooled per point, [95% interval]\n", style="dim")
        text.append(
            f"{'text':<10}{'ctx':>6}{'out':>6}{'n':>3}  {'tok/s':<20}{'commit':<18}step ms\n",
            style="bold",
        )
        for p in points:
            f = p.pooled
            text.append(
                f"{p.text_type:<10}{p.context:>6}{p.max_tokens:>6}{p.n:>3}  "
                f"{fmt.interval(f and f.tok_s, fmt.TOK_S):<20}"
                f"{fmt.interval(f and f.commit, fmt.COMMIT):<18}"
                f"{fmt.interval(f and f.step_s, fmt.STEP_MS)}\n"
            )
    elif run.live:
        text.append(f"{len(run.live)} live samples\n")
    else:
        text.append("(no samples)\n")
    return text


class HistoryScreen(ViewScreen):
    BINDINGS = keys.bindings("history")
    KEY_SCOPE = "history"
    HOME = "#hist-runs"
    DEFAULT_CSS = """
    HistoryScreen #hist-table { height: auto; display: none; }
    HistoryScreen #hist-table.-shown { display: block; }
    """

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="hist-top"):
            yield TextField(
                placeholder="/ filter: host, method, status, flags hash, id", id="hist-filter"
            )
            yield Static("", id="hist-count")
        with Horizontal(id="hist-actions", classes="action-row"):
            for button_id, _key, label, _action in BUTTONS:
                yield Button(label, id=button_id, compact=True)
        yield FittedTable(RUN_COLUMNS, id="hist-runs", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="hist-detail", classes="panel"):
            # A comparison's table, one row a line at every width, above its headers and
            # flags diff: below them, at 80x24, one row of it was in view. The panel's
            # title names A and B.
            yield FittedTable(COMPARE_COLUMNS, id="hist-table", show_cursor=False)
            yield Static("", id="hist-text")
            yield Static("", id="hist-after")

    def on_mount(self) -> None:
        self.runs: list[StoredRun] = []
        self.marked: list[int] = []
        table = self.query_one("#hist-runs", FittedTable)
        for button_id, key_id, label, _action in BUTTONS:
            self.query_one(f"#{button_id}", Button).label = f"{label} ({self.key_for(key_id)})"
        detail = self.query_one("#hist-detail")
        detail.border_title = "run (space marks two, c compares, v explains)"
        table.focus()
        self.action_reload()
        self.set_interval(CHECK_EVERY_S, self._check_for_new)

    def on_screen_resume(self) -> None:
        self.action_reload()

    @work(group="history-check", exclusive=True, exit_on_error=False)
    async def _check_for_new(self) -> None:
        """Reload when the newest run is not the one listed (a run stored elsewhere, or
        one that finished since): one small query, only while the view is shown."""
        if not self.is_current:
            return
        try:
            newest = await self.session.run_store().runs(limit=1)
        except ConsoleError:
            return
        listed = self.runs[0] if self.runs else None
        seen = (listed.id, listed.status, listed.sample_count) if listed else None
        now = (newest[0].id, newest[0].status, newest[0].sample_count) if newest else None
        if now != seen:
            self.action_reload()

    @work(group="history-load", exclusive=True, exit_on_error=False, description="history")
    async def action_reload(self) -> None:
        try:
            self.runs = await self.session.run_store().runs(limit=RUN_LIMIT)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self._fill()

    def _fill(self) -> None:
        query = self.query_one("#hist-filter", Input).value
        table = self.query_one("#hist-runs", FittedTable)
        shown = [r for r in self.runs if matches(r, query)]
        table.set_rows([(run_cells(run, run.id in self.marked), str(run.id)) for run in shown])
        self.query_one("#hist-count", Static).update(f"{len(shown)}/{len(self.runs)} runs")
        if not self.runs:
            self._detail(
                "No stored runs yet: the prompt lab (p) and sweeps (w) store every run here."
            )

    @on(Input.Changed, "#hist-filter")
    def _filtered(self) -> None:
        self._fill()

    @on(Input.Submitted, "#hist-filter")
    def _filter_done(self) -> None:
        self.query_one("#hist-runs").focus()

    def action_focus_filter(self) -> None:
        self.query_one("#hist-filter").focus()

    def action_leave_field(self) -> None:
        self.leave_form()

    def can_run(self, action: str, params: tuple[object, ...] = ()) -> bool:
        if action == "compare":
            return len(self.marked) == 2
        if action == "export":
            return bool(self.marked) or self._current_id() is not None
        return True

    @on(Button.Pressed, "#hist-actions Button")
    async def _button(self, event: Button.Pressed) -> None:
        # `run_action` is a coroutine: un-awaited, a click did nothing while the key
        # (which Textual awaits) worked.
        for button_id, _key, _label, action in BUTTONS:
            if event.button.id == button_id:
                await self.run_action(action)

    @on(DataTable.RowSelected, "#hist-runs")
    def _opened(self) -> None:
        # Enter: the selected run in the detail panel, scrolled to its top.
        run_id = self._current_id()
        if run_id is not None:
            self.query_one("#hist-detail").scroll_home(animate=False)
            self._show_run(run_id)

    def _current_id(self) -> int | None:
        table = self.query_one("#hist-runs", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key
        return int(key.value) if key.value else None

    @on(DataTable.RowHighlighted, "#hist-runs")
    def _highlighted(self) -> None:
        run_id = self._current_id()
        if run_id is not None:
            self._show_run(run_id)

    @work(group="history-detail", exclusive=True, exit_on_error=False)
    async def _show_run(self, run_id: int) -> None:
        try:
            run = await self.session.run_store().run(run_id)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self._detail(run_text(run))
        # The title names what the panel shows: this run, not an earlier comparison.
        self.query_one("#hist-detail").border_title = f"run {run.id} ({run.info.kind})"

    def _detail(self, text: Text | str, rows: list | None = None, after: str = "") -> None:
        """Show `text` in the detail panel, and a comparison's table `rows` and `after`."""
        # Text, never markup: "[95% interval]" in a comparison is words, not a style.
        self.query_one("#hist-text", Static).update(Text(text) if isinstance(text, str) else text)
        table = self.query_one("#hist-table", FittedTable)
        table.set_rows(rows or [])
        table.set_class(bool(rows), "-shown")
        self.query_one("#hist-after", Static).update(Text(after))

    def action_mark(self) -> None:
        run_id = self._current_id()
        if run_id is None:
            return
        if run_id in self.marked:
            self.marked.remove(run_id)
        else:
            self.marked = [*self.marked, run_id][-2:]  # two at most: the last two marked
        table = self.query_one("#hist-runs", DataTable)
        row = table.cursor_row
        self._fill()
        table.move_cursor(row=row)

    @work(group="history-compare", exclusive=True, exit_on_error=False)
    async def action_compare(self) -> None:
        if len(self.marked) != 2:
            self.notify("Mark two runs with space first (the older one is A).")
            return
        store = self.session.run_store()
        try:
            a, b = sorted([await store.run(i) for i in self.marked], key=lambda r: r.id)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self._detail(*compare_parts(compare(a, b)))
        self.query_one("#hist-detail").border_title = f"run {a.id} (A) vs run {b.id} (B)"

    @work(group="history-compare", exclusive=True, exit_on_error=False)
    async def action_explain(self) -> None:
        """The verdict on the newer marked run against the older (`history explain`)."""
        if len(self.marked) != 2:
            self.notify("Mark two runs with space first (the older one is the baseline).")
            return
        store = self.session.run_store()
        try:
            a, b = sorted([await store.run(i) for i in self.marked], key=lambda r: r.id)
            explained = await explain_runs(store, a, b)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self._detail(explain_text(explained))
        self.query_one("#hist-detail").border_title = f"run {b.id} explained against run {a.id}"

    @work(group="history-export", exclusive=True, exit_on_error=False)
    async def action_export(self, fmt: str) -> None:
        ids = list(self.marked) or ([self._current_id()] if self._current_id() else [])
        if not ids:
            self.notify("No run to export: select or mark runs first.")
            return
        store = self.session.run_store()
        try:
            runs = [await store.run(i) for i in ids]
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        path = Path.cwd() / f"specconsole-runs-{'-'.join(str(i) for i in ids)}.{fmt}"
        try:
            with path.open("w", newline="") as out:
                (export_csv if fmt == "csv" else export_json)(runs, out)
        except OSError as exc:
            self.notify(f"Could not export: {exc}.", severity="error")
            return
        self.notify(f"Exported {len(runs)} run(s) to {path}.")
