"""`w`: sweeps and the verdict — is this throughput physics or a bug?

A context sweep (fixed output, exact prompt lengths) or an output sweep (fixed prompt,
several output lengths) is a `RunSweep` request the app runs with
`methods.context_sweep` / `methods.output_sweep`, the same calls as `specconsole sweep`,
with progress and cancel (C). The charts put tok/s and step time against context and
commit length per text type; the fitted model (`decompose.fit`) then explains an
observed figure (`decompose.explain`) with its arithmetic written out, optionally
against a baseline. The observed figure can be typed or taken from the live series'
last minute.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, ProgressBar, Select, Static

from console.analysis import format as fmt
from console.analysis.decompose import ThroughputModel
from console.analysis.intervals import Interval
from console.analysis.live_window import LiveWindow
from console.analysis.stats import PointSummary
from console.analysis.verdict import Sweep
from console.errors import ConsoleError
from console.tui import keys
from console.tui.form_memory import load_form, save_form
from console.tui.messages import ActionProgress, ActionRefused, RunSweep, SweepRan
from console.tui.screens.base import ViewScreen
from console.tui.screens.sweeps_breakeven import BreakevenPanel
from console.tui.screens.sweeps_fold import FoldedForm
from console.tui.screens.sweeps_load import LoadPanel
from console.tui.screens.sweeps_methods import METHODS, SWEEPS, method_params, result_lines
from console.tui.screens.sweeps_verdict import VerdictPanel
from console.tui.widgets.chart import Chart, ChartSeries
from console.tui.widgets.fitted_table import Col, FittedTable
from console.tui.widgets.form import field, inline_field
from console.tui.widgets.text_field import TextField

# The points table: figures as wide as their widest cell (never cut), the text type cut
# with an ellipsis if it must, the repeat count (the form says it too) dropped if it must.
POINT_COLUMNS = (Col("text", flex=True, min_width=5), Col("tokens"), Col("n", optional=True),
                 Col("tok/s"),
                 Col("commit"), Col("step ms"))  # fmt: skip
# The sweep form's fields, remembered per host so a reconnect keeps what was typed.
FORM_FIELDS = ("#sweep-contexts", "#sweep-outputs", "#sweep-types", "#sweep-repeat",
               "#sweep-target", "#sweep-max", "#sweep-prompts")  # fmt: skip
# What each method reads of the form, in `method_params`' order.
METHOD_FIELDS = FORM_FIELDS[:6]
# The action buttons under the form: (id, key id, label).
BUTTONS = (
    ("sweep-run-button", "sweep-run", "Run sweep"),
    ("sweep-explain-button", "sweep-explain", "Verdict"),
    # shown while a verdict offers its settling measurement (sweeps_verdict.py)
    ("sweep-settle-button", "sweep-settle", "Settle"),
    ("sweep-live-button", "sweep-live", "Live figures"),
    ("sweep-breakeven-button", "sweep-breakeven", "Break-even"),
)


def point_series(points: list[PointSummary], x_of, y_of, scale: float = 1.0) -> list[ChartSeries]:
    """One series per text type, x by `x_of(point)`, y the pooled `y_of(point.pooled)`:
    each sweep point a marker with its 95% interval as a bar, joined in x order, so four
    measured points never read as a dense curve."""
    by_type: dict[str, list[tuple[float, Interval]]] = {}
    for p in points:
        if p.pooled is not None:
            by_type.setdefault(p.text_type, []).append((float(x_of(p)), y_of(p.pooled)))
    out = []
    for kind, pts in sorted(by_type.items()):
        pts.sort(key=lambda item: item[0])
        out.append(
            ChartSeries(
                kind,
                [(x, iv.value * scale) for x, iv in pts],
                markers=True,
                spread=[(iv.low * scale, iv.high * scale) for _, iv in pts],
            )
        )
    return out


# The verdict form's two rows: (label, placeholder, id) of the observed figure's fields,
# then the baseline's. "on" is what both typed figures were measured on (`--passages`):
# the operator's own prompts (blank, "own") or the sweep's passages ("sweep").
# "streams" is how many requests were decoding at once when the figure was read
# (`--concurrency`, `--baseline-concurrency`): set, the pair is read through the stored
# load run's load factor instead of the sweep's model.
VERDICT_ROWS = (
    (("observed", "tok/s", "v-observed"), ("prompt", "tokens", "v-context"),
     ("text", "type", "v-text"), ("out", "sweep's", "v-output"), ("n", "1", "v-requests"),
     ("on", "own", "v-passages"), ("streams", "1", "v-concurrency")),
    (("baseline", "optional", "v-baseline"), ("prompt", "tokens", "v-baseline-context"),
     ("text", "type", "v-baseline-text"), ("out", "sweep's", "v-baseline-output"),
     ("n", "1", "v-baseline-requests"), ("streams", "1", "v-baseline-concurrency")),
)  # fmt: skip


class SweepsScreen(FoldedForm, BreakevenPanel, LoadPanel, VerdictPanel, ViewScreen):
    BINDINGS = keys.bindings("sweeps")
    KEY_SCOPE = "sweeps"
    HOME = "#sweep-points"
    # Only the break-even panel is styled here; it stays hidden while there are no runs,
    # and below 40 rows (the base screen's "-tall" size class) it is one line instead.
    DEFAULT_CSS = """
    SweepsScreen #breakeven-panel { height: auto; max-height: 12; display: none; }
    SweepsScreen #breakeven-line { height: 1; padding: 0 1; display: none; }
    SweepsScreen.-breakeven.-tall #breakeven-panel { display: block; }
    SweepsScreen.-breakeven #breakeven-line { display: block; }
    SweepsScreen.-breakeven.-tall #breakeven-line { display: none; }
    SweepsScreen #breakeven-text { width: auto; }
    SweepsScreen #sweep-folded {
        display: none; width: 100%; height: 1; padding: 0 1; content-align: left middle;
        text-align: left; text-wrap: nowrap; text-overflow: ellipsis;
        background: $panel; color: $text; text-style: none;
    }
    SweepsScreen #sweep-folded:focus { background: $primary 40%; }
    SweepsScreen.-folded #sweep-folded { display: block; }
    SweepsScreen.-folded #sweep-form { display: none; }
    """

    def compose_body(self) -> ComposeResult:
        # The form in one line, in its place once a sweep's points are shown (sweeps_fold).
        folded = Button("", id="sweep-folded", compact=True)
        folded.can_focus = False  # while hidden: the focus starts in the form, as it did
        yield folded
        with Vertical(id="sweep-form", classes="panel"):
            with Horizontal(id="sweep-fields"):
                kind = Select(METHODS, value="context", allow_blank=False, id="sweep-kind")
                yield field("method", kind)
                yield field(
                    "contexts (tokens)",
                    TextField("64,256,512,1024", id="sweep-contexts"),
                    wide=True,
                )
                yield field("output tokens", TextField("64", id="sweep-outputs"))
                yield field("text types", TextField("code,prose", id="sweep-types"))
            # How many requests a point (blank: the CLI's default, repeat until each
            # point's interval is within ± 5%), and `--prompts`' extra texts.
            with Horizontal(id="sweep-sampling", classes="verdict-form"):
                yield from inline_field("repeat", "auto", "sweep-repeat")
                yield from inline_field("± target", "5%", "sweep-target")
                yield from inline_field("max repeat", "10", "sweep-max")
                yield from inline_field("prompt file", "optional", "sweep-prompts")
        with Horizontal(id="sweep-progress-row", classes="action-row"):
            for button_id, _key_id, label in BUTTONS:
                variant = "primary" if button_id == "sweep-run-button" else "default"
                yield Button(label, id=button_id, compact=True, variant=variant)
            yield ProgressBar(total=1, show_eta=False, id="sweep-progress")
            yield Static("", id="sweep-note")
        hz = self.session.settings.chart_hz
        with Horizontal(id="sweep-charts"):
            yield Chart("decode tok/s", x_label="context tokens", hz=hz, id="sweep-tok")
            yield Chart("step time (ms)", x_label="context tokens", hz=hz, id="sweep-step")
            yield Chart("commit length by text", x_label="context tokens", hz=hz,
                        id="sweep-commit")  # fmt: skip
        with Horizontal(id="sweep-bottom"):
            yield FittedTable(POINT_COLUMNS, id="sweep-points", show_cursor=False,
                              zebra_stripes=True)  # fmt: skip
            with Vertical(id="verdict-panel", classes="panel"):
                # Two rows, labels beside the boxes: the observed figure and the
                # baseline, each with its prompt length (as typed on the command line),
                # text type, output tokens ("out", blank: the sweep's) and how many
                # requests it is the median of ("n", blank: one). The verdict keeps its
                # room for the explanation at every terminal size.
                for row in VERDICT_ROWS:
                    with Horizontal(classes="verdict-form"):
                        for label, hint, field_id in row:
                            yield from inline_field(label, hint, field_id)
                with VerticalScroll(id="verdict-scroll"):
                    yield Static("", id="verdict")
        # Stored break-even runs (`specconsole breakeven`), apart from the verdict panel:
        # at which context speculation stops paying, per run, with intervals.
        with VerticalScroll(id="breakeven-panel", classes="panel"):
            yield Static("", id="breakeven-text")
        # Below 40 rows the table would squeeze the sweep's points and verdict: one line.
        yield Static("", id="breakeven-line")

    def on_mount(self) -> None:
        self.model: ThroughputModel | None = None
        self.sweep: Sweep | None = None  # the model's requests: the verdict resamples them
        self.model_source = ""
        self._live: LiveWindow | None = None  # the live figures ctrl+l took, until retyped
        self.query_one("#sweep-form").border_title = "sweep"
        explain, live = self.key_for("sweep-explain"), self.key_for("sweep-live")
        self.query_one("#verdict-panel").border_title = f"verdict ({explain}; {live} live)"
        for button_id, key_id, label in BUTTONS:
            self.query_one(f"#{button_id}", Button).label = f"{label} ({self.key_for(key_id)})"
        self.show_note(f"{self.key_for('sweep-run')} runs; C cancels (samples taken are kept)")
        self._restore_form()
        self.query_one("#sweep-points").border_title = "points: pooled, 95% interval"
        self.query_one("#sweep-progress").display = False
        self.query_one("#sweep-settle-button").display = False
        self._load_stored_model()
        self.mount_breakeven()

    def action_leave_field(self) -> None:
        self.leave_form()

    def can_run(self, action: str, params: tuple[object, ...] = ()) -> bool:
        if action == "run_sweep":
            return not self.session.running
        if action == "explain":
            return self.model is not None
        if action == "use_live":
            return bool(self.session.live_samples)
        if action in ("breakeven", "settle", "load"):
            return not self.session.running
        return True

    @on(Button.Pressed, "#sweep-folded")
    def _folded_pressed(self) -> None:
        self.unfold()

    def on_descendant_focus(self) -> None:
        self.show_folded()

    def on_descendant_blur(self) -> None:
        self.show_folded()

    @on(Input.Changed, "#sweep-form Input")
    @on(Select.Changed, "#sweep-kind")
    def _form_changed(self) -> None:
        self.show_folded()  # the folded line says what the form holds

    def on_resize(self) -> None:
        # After the base screen's handler has set the size classes: -tall never folds.
        self.call_after_refresh(self.show_folded)
        self.call_after_refresh(lambda: self.show_note(self._note))

    _note = ""

    def show_note(self, text: str) -> None:
        """The progress note beside the buttons; below 140 columns, where the buttons
        leave it little room (at 80 it was off the screen, the progress bar with it, and
        cut at 100), on the points table's bottom edge as well: "3/16 requests", "refused: …", "16
        requests, stored as run 7"."""
        self._note = text
        self.query_one("#sweep-note", Static).update(text)
        wide = self.has_class("-wide")
        self.query_one("#sweep-points").border_subtitle = "" if wide else text

    @on(Button.Pressed, "#sweep-run-button")
    def _run_pressed(self) -> None:
        self.action_run_sweep()

    @on(Button.Pressed, "#sweep-explain-button")
    def _explain_pressed(self) -> None:
        self.action_explain()

    @on(Button.Pressed, "#sweep-live-button")
    def _live_pressed(self) -> None:
        self.action_use_live()

    @on(Button.Pressed, "#sweep-breakeven-button")
    def _breakeven_pressed(self) -> None:
        self.action_breakeven()

    @on(Button.Pressed, "#sweep-settle-button")
    def _settle_pressed(self) -> None:
        self.action_settle()

    # -- the form, remembered per host ------------------------------------------------

    def _restore_form(self) -> None:
        saved = load_form(self.session.host or "", "sweep")
        kind = saved.get("#sweep-kind")
        if kind in dict(METHODS).values():
            self.query_one("#sweep-kind", Select).value = kind
        for selector in FORM_FIELDS:
            if isinstance(saved.get(selector), str):
                self.query_one(selector, Input).value = saved[selector]

    def _remember_form(self) -> None:
        values = {s: self.query_one(s, Input).value for s in FORM_FIELDS}
        values["#sweep-kind"] = str(self.query_one("#sweep-kind", Select).value)
        save_form(self.session.host or "", "sweep", values)

    # -- running --------------------------------------------------------------------

    def _params(self) -> tuple[str, dict]:
        kind = str(self.query_one("#sweep-kind", Select).value)
        values = (self.query_one(f, Input).value for f in METHOD_FIELDS)
        return kind, method_params(kind, *values)

    def prompt_file(self) -> str:
        """`--prompts`: the file of extra texts the run's library adds ("" for none)."""
        return self.query_one("#sweep-prompts", Input).value.strip()

    def action_run_method(self, kind: str) -> None:
        """Run `kind` (the palette's two-point and stream check) with the form's fields."""
        self.query_one("#sweep-kind", Select).value = kind
        self.action_run_sweep()

    def action_run_sweep(self) -> None:
        try:
            kind, params = self._params()
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self._remember_form()
        self._running_params = params
        bar = self.query_one("#sweep-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self.show_note("warming up…")
        self.leave_form()  # C must cancel the sweep, not type into the repeat field
        self.request(RunSweep(kind, params, prompts=self.prompt_file()))  # type: ignore[arg-type]

    def on_action_progress(self, message: ActionProgress) -> None:
        bar = self.query_one("#sweep-progress", ProgressBar)
        bar.update(total=message.total, progress=message.done)
        self.show_note(f"{message.done}/{message.total} requests")

    def on_action_refused(self, message: ActionRefused) -> None:
        # Whatever became of it, the progress ends and says which: never "warming up…"
        # left animating after a refusal or a failure.
        self.query_one("#sweep-progress").display = False
        self.show_note(message.outcome)

    def on_sweep_ran(self, message: SweepRan) -> None:
        kind, result = message.kind, message.result
        self.query_one("#sweep-progress").display = False
        stored = f"stored as run {result.run_id}" if result.run_id is not None else "not stored"
        self.show_note(f"{len(result.samples)} requests, {stored}")
        if kind not in SWEEPS:  # two-point, stream check: the CLI's lines, in the panel
            lines = result_lines(kind, getattr(self, "_running_params", {}), result)
            self.show_verdict(Text(f"{kind}\n" + "\n".join(lines)))
            return
        self._show_points(result.points, kind)
        if result.model is not None:
            self._set_model(result.model, f"this sweep (run {result.run_id})", result.samples)
        elif result.figures.get("fit_error"):
            self.show_verdict(f"no model: {result.figures['fit_error']}")

    def _show_points(self, points: list[PointSummary], kind: str) -> None:
        x_label = "context tokens" if kind == "context" else "output tokens"

        def x_of(p: PointSummary) -> float:
            return p.context if kind == "context" else p.max_tokens

        charts = (
            ("#sweep-tok", lambda f: f.tok_s, 1.0),
            ("#sweep-step", lambda f: f.step_s, 1000.0),
            ("#sweep-commit", lambda f: f.commit, 1.0),
        )
        for selector, get, scale in charts:
            chart = self.query_one(selector, Chart)
            chart.x_label = x_label
            chart.set_series(point_series(points, x_of, get, scale))
        rows = [
            ((p.text_type, str(int(x_of(p))), str(p.n),
              fmt.interval(p.pooled and p.pooled.tok_s, fmt.TOK_S),
              fmt.interval(p.pooled and p.pooled.commit, fmt.COMMIT),
              fmt.interval(p.pooled and p.pooled.step_s, fmt.STEP_MS)), None)
            for p in points
        ]  # fmt: skip
        self.query_one("#sweep-points", FittedTable).set_rows(rows)
        first, self._points_shown = not self._points_shown, True
        if first and not self.has_class("-tall") and self.focused is self.query_one("#sweep-kind"):
            # The focus the view opened with, not the operator's: to the points, so the
            # form folds and the points are in view (a Tab or a click unfolds it).
            self.leave_form()
        self.show_folded()

    # Here, not in VerdictPanel: Textual finds `@on` handlers only on its own classes.
    @on(Input.Changed, "#v-observed, #v-context")
    def _typed_observed(self) -> None:
        # A typed figure is not the live one: its commit and step no longer apply.
        self._live = None
