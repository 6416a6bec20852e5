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

import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Input, ProgressBar, Select, Static

from console.errors import ConsoleError
from console.measure import breakeven
from console.measure import format as fmt
from console.measure.decompose import FitError, ThroughputModel, Verdict, explain, fit
from console.measure.live_window import LiveWindow, closest_type, explain_live, live_window
from console.measure.numbers import parse_count as positive_int
from console.measure.numbers import parse_counts as int_list
from console.measure.stats import PointSummary, Spread
from console.tui import keys
from console.tui.messages import ActionProgress, ActionRefused, RunSweep, SweepRan
from console.tui.screens.base import ViewScreen
from console.tui.widgets.chart import Chart, ChartSeries
from console.tui.widgets.form import field


def type_list(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise ConsoleError("Give at least one text type (e.g. code,prose).")
    return names


def point_series(points: list[PointSummary], x_of, y_of, scale: float = 1.0) -> list[ChartSeries]:
    """One series per text type, x by `x_of(point)`, y the median `y_of(point)`: each
    sweep point a marker with its lowest-highest bar over repeats, joined in x order, so
    four measured points never read as a dense curve."""
    by_type: dict[str, list[tuple[float, Spread]]] = {}
    for p in points:
        spread: Spread | None = y_of(p)
        if spread is not None:
            by_type.setdefault(p.text_type, []).append((float(x_of(p)), spread))
    out = []
    for kind, pts in sorted(by_type.items()):
        pts.sort(key=lambda item: item[0])
        out.append(
            ChartSeries(
                kind,
                [(x, sp.median * scale) for x, sp in pts],
                markers=True,
                spread=[(sp.low * scale, sp.high * scale) for _, sp in pts],
            )
        )
    return out


def model_text(model: ThroughputModel, source: str) -> Text:
    text = Text()
    text.append(f"model from {source}\n", style="bold")
    for line in model.describe():
        text.append(line + "\n", style="italic" if line.startswith("note: ") else "")
    return text


BREAKEVEN_RUNS = 3  # the newest break-even runs shown


def breakeven_text(runs: list) -> Text:
    """Each stored break-even run: which run, when, on which flags, and its table."""
    text = Text()
    for run in runs:
        rows = breakeven.stored_rows(run.summary)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.info.started_at))
        text.append(f"run {run.id}  {when}  flags {run.info.flags_hash}  {run.status}\n",
                    style="bold")  # fmt: skip
        if not rows:
            text.append("  no table (the run did not finish)\n")
            continue
        text.append("\n".join(breakeven.table_lines(rows)) + "\n")
    return text


def breakeven_line(run) -> str:
    """The newest break-even run in one line: where speculation pays, by how much."""
    rows = breakeven.stored_rows(run.summary)
    if not rows:
        return f"break-even run {run.id}: no table (the run did not finish)"
    cells = ", ".join(f"ctx {r.context} x{r.speedup.value:.2f}" for r in rows)
    paying = [r.context for r in rows if r.pays]
    verdict = f"pays up to ctx {max(paying)}" if paying else "does not pay at any context"
    return f"break-even run {run.id}: speculation {verdict} ({cells}); taller window: table"


class SweepsScreen(ViewScreen):
    BINDINGS = keys.bindings("sweeps")
    # Only the break-even panel is styled here; it stays hidden while there are no runs.
    DEFAULT_CSS = """
    SweepsScreen #breakeven-panel { height: auto; max-height: 12; display: none; }
    SweepsScreen #breakeven-line { height: 1; padding: 0 1; display: none; }
    SweepsScreen.-breakeven #breakeven-panel { display: block; }
    SweepsScreen.-breakeven.-short #breakeven-panel { display: none; }
    SweepsScreen.-breakeven.-short #breakeven-line { display: block; }
    SweepsScreen #breakeven-text { width: auto; }
    """

    def compose_body(self) -> ComposeResult:
        kinds = [("context sweep", "context"), ("output sweep", "output")]
        with Horizontal(id="sweep-form", classes="panel"):
            yield field("sweep", Select(kinds, value="context", allow_blank=False, id="sweep-kind"))
            yield field(
                "contexts (tokens)", Input("64,256,512,1024", id="sweep-contexts"), wide=True
            )
            yield field("output tokens", Input("64", id="sweep-outputs"))
            yield field("text types", Input("code,prose", id="sweep-types"))
            yield field("repeat", Input("1", id="sweep-repeat"))
        with Horizontal(id="sweep-progress-row"):
            yield ProgressBar(total=1, show_eta=False, id="sweep-progress")
            yield Static("ctrl+r runs the sweep; C cancels (samples taken are kept)",
                         id="sweep-note")  # fmt: skip
        hz = self.session.settings.chart_hz
        with Horizontal(id="sweep-charts"):
            yield Chart("decode tok/s", x_label="context tokens", hz=hz, id="sweep-tok")
            yield Chart("step time (ms)", x_label="context tokens", hz=hz, id="sweep-step")
            yield Chart("commit length by text", x_label="context tokens", hz=hz,
                        id="sweep-commit")  # fmt: skip
        with Horizontal(id="sweep-bottom"):
            yield DataTable(id="sweep-points", show_cursor=False, zebra_stripes=True)
            with Vertical(id="verdict-panel", classes="panel"):
                with Horizontal(classes="verdict-form"):
                    yield Input(placeholder="observed tok/s", id="v-observed")
                    yield Input(placeholder="at context", id="v-context")
                    yield Input(placeholder="text type", id="v-text")
                with Horizontal(classes="verdict-form"):
                    yield Input(placeholder="baseline tok/s (optional)", id="v-baseline")
                    yield Input(placeholder="baseline context", id="v-baseline-context")
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
        self.model_source = ""
        self._live: LiveWindow | None = None  # the live figures ctrl+l took, until retyped
        self.query_one("#sweep-form").border_title = "sweep"
        self.query_one(
            "#verdict-panel"
        ).border_title = "verdict (ctrl+t explains; ctrl+l takes the live figures)"
        table = self.query_one("#sweep-points", DataTable)
        table.border_title = "points: median, lowest-highest"
        for label, width in (("text", 8), ("tokens", 6), ("n", 3), ("tok/s", 20), ("commit", 17),
                             ("step ms", 17)):  # fmt: skip
            table.add_column(label, width=width)
        self.query_one("#sweep-progress").display = False
        for selector, title in (("#v-observed", "observed tok/s"), ("#v-context", "at context"),
                                ("#v-text", "text type"), ("#v-baseline", "baseline tok/s"),
                                ("#v-baseline-context", "baseline context")):  # fmt: skip
            self.query_one(selector).border_title = title
        title = "break-even runs (specconsole breakeven): commit needed vs measured per context"
        self.query_one("#breakeven-panel").border_title = title
        self._load_stored_model()
        self._load_breakeven()

    def on_screen_resume(self) -> None:
        # `specconsole breakeven` runs from a shell: look again whenever the view shows.
        self._load_breakeven()

    @work(group="sweep-breakeven", exclusive=True, exit_on_error=False)
    async def _load_breakeven(self) -> None:
        session = self.session
        if session.service is None:
            return
        try:
            runs = await session.run_store().runs(
                host=session.service.profile.name, method=breakeven.METHOD, limit=BREAKEVEN_RUNS
            )
        except Exception:
            return  # no history yet: nothing to show
        self.set_class(bool(runs), "-breakeven")
        if runs:
            self.query_one("#breakeven-text", Static).update(breakeven_text(runs))
            self.query_one("#breakeven-line", Static).update(breakeven_line(runs[0]))

    def on_resize(self, event) -> None:
        self.set_class(event.size.height < 40, "-short")

    def action_leave_field(self) -> None:
        self.query_one("#sweep-points").focus()

    # -- the stored model -------------------------------------------------------------

    @work(group="sweep-model", exclusive=True, exit_on_error=False)
    async def _load_stored_model(self) -> None:
        session = self.session
        if session.service is None:
            return
        try:
            run = await session.run_store().latest(session.service.profile.name, "context-sweep")
        except Exception:
            return  # no history yet: the verdict waits for a sweep
        if run is None or self.model is not None:
            return
        try:
            model = fit(run.requests)
        except FitError:
            return
        from console.measure.stats import summarize

        self._show_points(summarize(run.requests), "context")
        self._set_model(model, f"stored sweep run {run.id} (flags {run.info.flags_hash})")

    def _set_model(self, model: ThroughputModel, source: str) -> None:
        self.model, self.model_source = model, source
        self.query_one("#verdict", Static).update(model_text(model, source))

    # -- running --------------------------------------------------------------------

    def _params(self) -> tuple[str, dict]:
        kind = str(self.query_one("#sweep-kind", Select).value)
        contexts = int_list(self.query_one("#sweep-contexts", Input).value, "Contexts")
        outputs = int_list(self.query_one("#sweep-outputs", Input).value, "Output tokens")
        types = type_list(self.query_one("#sweep-types", Input).value)
        repeat = positive_int(self.query_one("#sweep-repeat", Input).value, "Repeat")
        if kind == "context":
            if len(outputs) != 1:
                raise ConsoleError(
                    "A context sweep takes one output length; list contexts instead."
                )
            return kind, {"contexts": contexts, "output_tokens": outputs[0], "text_types": types,
                          "repeat": repeat}  # fmt: skip
        if len(contexts) != 1:
            raise ConsoleError("An output sweep takes one context; list output lengths instead.")
        return kind, {"outputs": outputs, "context": contexts[0], "text_types": types,
                      "repeat": repeat}  # fmt: skip

    def action_run_sweep(self) -> None:
        try:
            kind, params = self._params()
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        bar = self.query_one("#sweep-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self.query_one("#sweep-note", Static).update("warming up…")
        self.request(RunSweep(kind, params))  # type: ignore[arg-type]

    def on_action_progress(self, message: ActionProgress) -> None:
        bar = self.query_one("#sweep-progress", ProgressBar)
        bar.update(total=message.total, progress=message.done)
        self.query_one("#sweep-note", Static).update(f"{message.done}/{message.total} requests")

    def on_action_refused(self, _message: ActionRefused) -> None:
        self.query_one("#sweep-progress").display = False

    def on_sweep_ran(self, message: SweepRan) -> None:
        kind, result = message.kind, message.result
        self.query_one("#sweep-progress").display = False
        stored = f"stored as run {result.run_id}" if result.run_id is not None else "not stored"
        self.query_one("#sweep-note", Static).update(f"{len(result.samples)} requests, {stored}")
        self._show_points(result.points, kind)
        if result.model is not None:
            self._set_model(result.model, f"this sweep (run {result.run_id})")
        elif result.figures.get("fit_error"):
            self.query_one("#verdict", Static).update(f"no model: {result.figures['fit_error']}")

    def _show_points(self, points: list[PointSummary], kind: str) -> None:
        x_label = "context tokens" if kind == "context" else "output tokens"

        def x_of(p: PointSummary) -> float:
            return p.context if kind == "context" else p.max_tokens

        charts = (
            ("#sweep-tok", lambda p: p.tok_s, 1.0),
            ("#sweep-step", lambda p: p.step_s, 1000.0),
            ("#sweep-commit", lambda p: p.commit, 1.0),
        )
        for selector, get, scale in charts:
            chart = self.query_one(selector, Chart)
            chart.x_label = x_label
            chart.set_series(point_series(points, x_of, get, scale))
        table = self.query_one("#sweep-points", DataTable)
        table.clear()
        for p in points:
            table.add_row(
                p.text_type, str(int(x_of(p))), str(p.n), fmt.spread(p.tok_s, fmt.TOK_S),
                fmt.spread(p.commit, fmt.COMMIT), fmt.spread(p.step_s, fmt.STEP_MS),
            )  # fmt: skip

    # -- verdict --------------------------------------------------------------------

    def _number(self, selector: str, what: str, required: bool = True) -> float | None:
        text = self.query_one(selector, Input).value.strip()
        if not text:
            if required:
                raise ConsoleError(f"Give the {what} for the verdict.")
            return None
        try:
            return float(text)
        except ValueError:
            raise ConsoleError(f"The {what} must be a number, not {text!r}.") from None

    def action_explain(self) -> None:
        if self.model is None:
            self.notify("No model yet: run a context sweep first (ctrl+r).", severity="warning")
            return
        try:
            verdict = self._verdict(self.model)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        text = Text()
        text.append(verdict.headline + "\n", style="bold")
        for line in verdict.lines:
            text.append(f"  {line}\n")
        text.append(f"(model from {self.model_source})", style="dim")
        self.query_one("#verdict", Static).update(text)

    def _verdict(self, model: ThroughputModel) -> Verdict:
        typed_text = self.query_one("#v-text", Input).value.strip()
        if typed_text and typed_text not in model.commit:
            known = ", ".join(model.commit)
            raise ConsoleError(f"The sweep has no {typed_text!r} text; it measured {known}.")
        baseline = self._number("#v-baseline", "baseline tok/s", required=False)
        b_context = self._number("#v-baseline-context", "baseline context", required=False)
        if self._live is not None:
            # The live window's own figures, as `specconsole diagnose` explains them.
            return explain_live(
                model, self._live, text_type=typed_text or None,
                baseline=baseline, baseline_context=b_context,
            ).verdict  # fmt: skip
        return explain(
            model,
            observed=self._number("#v-observed", "observed tok/s"),
            context=self._number("#v-context", "context it was observed at"),
            text_type=typed_text or next(iter(model.commit)),
            baseline=baseline,
            baseline_context=b_context,
        )

    def action_use_live(self) -> None:
        """Observed figures from the live series' last minute (`measure.live_window`)."""
        samples = self.session.live_samples
        if not samples:
            self.notify("No live samples yet: the dashboard's series has seen no decoding.")
            return
        window = live_window(samples, now=time.time())
        if window is None:
            self.notify("No live samples with figures in the last minute.", severity="warning")
            return
        observed, at = self.query_one("#v-observed", Input), self.query_one("#v-context", Input)
        with observed.prevent(Input.Changed), at.prevent(Input.Changed):
            observed.value = fmt.tok_s(window.tok_s)
            at.value = f"{window.context:.0f}"
        self._live = window
        resembles = ""
        if self.model is not None:
            resembles = (
                f"; text resembles {closest_type(self.model, window.commit, window.context)}"
            )
        self.notify(
            f"Observed from {window.n} live samples "
            f"(newest {fmt.age(time.time() - window.newest)}){resembles}."
        )

    @on(Input.Changed, "#v-observed, #v-context")
    def _typed_observed(self) -> None:
        # A typed figure is not the live one: its commit and step no longer apply.
        self._live = None
