"""`p`: fire one test prompt and read every figure of it, with how it was measured.

A prompt comes from the library (a text type, padded to an exact context in tokens) or
is typed. The request (`RunPrompt`, run by the app) is `methods.probe`, what
`specconsole prompt` runs: at the host profile's sampling (greedy by default),
explicit max tokens, ignore_eos by default, streamed or not, stored as a run. Results
show TTFT, decode tok/s, commit length and step time, each with its source, and the
generated text.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import (
    Button,
    Input,
    ProgressBar,
    Select,
    Static,
    TextArea,
)

from console.analysis import format as fmt
from console.analysis.curve_summary import pooled_summary
from console.analysis.intervals import Interval
from console.analysis.records import RequestSample
from console.analysis.round_curve import LOOP_SHARE, RoundCurve, sample_curve
from console.analysis.stats import PointSummary
from console.errors import ConsoleError
from console.measure.prompts import PromptLibrary
from console.numbers import parse_count as positive_int
from console.tui import keys
from console.tui.form_memory import load_form, save_form
from console.tui.messages import ActionProgress, ActionRefused, PromptRan, RunPrompt
from console.tui.screens.base import ViewScreen
from console.tui.widgets.chart import Chart, ChartSeries
from console.tui.widgets.fitted_table import Col, FittedTable
from console.tui.widgets.form import field
from console.tui.widgets.text_field import TextField
from console.tui.widgets.tick_box import TickBox

TYPED = "typed"
# The form's fields, remembered per host (form_memory) as the sweeps form's are.
FORM_FIELDS = ("#lab-context", "#lab-max", "#lab-repeat", "#lab-passage", "#lab-prompts")
FORM_TICKS = ("#lab-ignore-eos", "#lab-stream")
# Figures are as wide as their widest cell ("128/128" whole); the text type and how each
# figure was measured give way with an ellipsis, the finish reason is dropped before that.
# Newest run first: its pooled row (with the 95% interval) above its raw rows, so the
# newest figures are on screen and selected at every size. "loop" flags output that
# repeats itself (commit there is repetition, not drafting), never cut.
RESULT_COLUMNS = (
    Col("text", flex=True, min_width=6), Col("context"), Col("tokens"),
    Col("TTFT ms", optional=True), Col("tok/s"), Col("commit"), Col("step ms"), Col("loop"),
    Col("finish", optional=True, yields=True),
    Col("measured", flex=True, min_width=12, optional=True, yields=True),
)  # fmt: skip


def _f(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, spec)


def result_row(s: RequestSample) -> tuple[str, ...]:
    ttft = s.ttft_s if s.ttft_s is not None else s.server_ttft_s
    how = f"{s.decode_source or 'no decode time'}, {'streamed' if s.streamed else 'not streamed'}"
    how += f", {s.sampling_text}"
    if s.ttft_s is None and s.server_ttft_s is not None:
        how += ", TTFT server"
    if s.flagged:
        how += f"; FLAGGED: {s.flagged}"
    looping = s.repetition is not None and s.repetition > LOOP_SHARE
    return (
        s.text_type, str(s.context_tokens), f"{s.completion_tokens}/{s.max_tokens}",
        _f(ttft, ".0f", 1000), _f(s.decode_tok_s, ".1f"), _f(s.commit_len, ".2f"),
        _f(s.step_time_s, ".2f", 1000), f"{s.repetition:.0%}" if looping else "",
        s.finish_reason, how,
    )  # fmt: skip


def _range(iv: Interval | None, figure: tuple[str, float]) -> str:
    spec, scale = figure
    return "" if iv is None else f"{iv.low * scale:{spec}}–{iv.high * scale:{spec}}"


def pooled_rows(p: PointSummary) -> list[tuple[str, ...]]:
    """A run's repeats of one point pooled (`summarize`, what `specconsole prompt
    --repeat` prints): the figures (tokens `n=3`), and under them their 95% intervals
    (tokens `95% CI`; one row each, so the table fits 80 columns with every interval
    whole)."""
    f = p.pooled
    figures = ((f and f.tok_s, fmt.TOK_S), (f and f.commit, fmt.COMMIT),
               (f and f.step_s, fmt.STEP_MS))  # fmt: skip
    values = [fmt.interval(iv, fig).split(" [")[0] for iv, fig in figures]
    how = f"pooled over {p.n} requests"
    # Said in the narrow tokens column, so the text column is as wide as a text type and
    # neither label is cut at 80 columns.
    return [
        (p.text_type, str(p.context), f"n={p.n}", "", *values, "", "", how),
        ("", "", "95% CI", "", *(_range(iv, fig) for iv, fig in figures), "", "",
         "bootstrap over requests"),
    ]  # fmt: skip


def run_rows(points: list[PointSummary], samples: list[RequestSample]) -> list[tuple]:
    """One run's rows: pooled rows (when it repeated) above the raw rows, newest first."""
    pooled = [row for p in points if p.n > 1 for row in pooled_rows(p)]
    return pooled + [result_row(s) for s in reversed(samples)]


LOOP_SLOT = 4  # the theme's warning colour: looping windows stand out on both curves


def curve_series(curve: RoundCurve) -> dict[str, list[ChartSeries]]:
    """The per-round curve's two charts against context: commit length and step time per
    window (points joined in order, since the windows tile one request), the rolling mean,
    and the looping windows marked, since commit there is repetition, not drafting."""
    windows = curve.windows
    out: dict[str, list[ChartSeries]] = {}
    for name, get, rolling in (
        ("commit", lambda w: w.commit, lambda w: w.commit_rolling),
        ("step", lambda w: w.step_s * 1000, lambda w: w.step_rolling_s * 1000),
    ):
        series = [
            ChartSeries(f"per {curve.bin_tokens} tokens", [(w.context, get(w)) for w in windows],
                        markers=True, slot=0),
            ChartSeries(f"rolling ({curve.smooth})", [(w.context, rolling(w)) for w in windows],
                        slot=1),
        ]  # fmt: skip
        looping = [(w.context, get(w)) for w in windows if w.looping]
        if looping:
            series.append(
                ChartSeries("looping output", looping, markers=True, lines=False, slot=LOOP_SLOT)
            )
        out[name] = series
    return out


class PromptLabScreen(ViewScreen):
    BINDINGS = keys.bindings("prompt")
    KEY_SCOPE = "prompt"
    HOME = "#lab-results"
    # Only the curve row is styled here; it stays hidden until a request reports rounds.
    DEFAULT_CSS = """
    PromptLabScreen #lab-curve { height: 3fr; min-height: 8; max-height: 18; display: none; }
    PromptLabScreen.-tall #lab-curve { min-height: 10; }
    PromptLabScreen #lab-curve-summary { height: auto; padding: 0 1; color: $text-muted; }
    /* Below 30 rows the curve gives way (its summary stays): the results keep their room. */
    PromptLabScreen.-short #lab-curve.-shown { display: none; }
    PromptLabScreen #lab-curve.-shown { display: block; }
    PromptLabScreen #lab-curve Chart { width: 1fr; height: 100%; border: round $foreground 30%; }
    """

    def compose_body(self) -> ComposeResult:
        types = [(t, t) for t in PromptLibrary.builtin().types] + [("typed prompt", TYPED)]
        with Horizontal(id="lab-form", classes="panel"):
            yield field("prompt", Select(types, value="code", allow_blank=False, id="lab-type"))
            yield field("context (tokens)", TextField("256", id="lab-context"))
            yield field("max tokens", TextField("128", id="lab-max"))
            yield field("repeat", TextField("1", id="lab-repeat"), narrow=True)
            # `--first-passage`: the library window the first repeat reads (a sweep reads
            # 0-5; 20 and on are passages no sweep read, as the operator's own prompts).
            yield field("passage", TextField("0", id="lab-passage"), narrow=True)
            # `--prompts`: a .txt (one type) or .jsonl of extra texts; its types join the
            # prompt select when the field is left or Enter is pressed.
            yield field("prompt file", TextField("", placeholder="optional", id="lab-prompts"))
            with Vertical(classes="field-checks"):
                yield TickBox("ignore_eos", True, id="lab-ignore-eos")
                yield TickBox("stream", False, id="lab-stream")
        yield TextArea("", id="lab-typed")
        with Horizontal(id="lab-progress-row", classes="action-row"):
            yield Button("Run prompt", id="lab-run", variant="primary", compact=True)
            yield ProgressBar(total=1, show_eta=False, id="lab-progress")
            yield Static("", id="lab-note")
        yield FittedTable(RESULT_COLUMNS, id="lab-results", cursor_type="row", zebra_stripes=True)
        hz = self.session.settings.chart_hz
        yield Static("", id="lab-curve-summary")
        with Horizontal(id="lab-curve"):
            # x is said in the titles: a row of x label costs a chart a quarter of its plot.
            yield Chart("commit per round vs context", hz=hz, id="lab-curve-commit")
            yield Chart("step ms vs context", hz=hz, id="lab-curve-step")
        yield TextArea("", id="lab-output", read_only=True)

    def on_mount(self) -> None:
        self.query_one("#lab-form").border_title = "request"
        self.query_one("#lab-results").border_title = "results"
        self.query_one("#lab-output").border_title = "generated text"
        self.query_one("#lab-typed").border_title = "typed prompt"
        self.query_one("#lab-typed").display = False
        self.query_one("#lab-progress").display = False
        run = self.key_for("prompt-run")
        self.query_one("#lab-run", Button).label = f"Run prompt ({run})"
        self.query_one("#lab-note", Static).update(f"{run} runs; figures keep their source")
        self._restore_form()

    # -- the form, remembered per host as the sweeps form is ---------------------------

    def _restore_form(self) -> None:
        saved = load_form(self.session.host or "", "prompt")
        for selector in FORM_FIELDS:
            if isinstance(saved.get(selector), str):
                self.query_one(selector, Input).value = saved[selector]
        self._offer_types()  # a remembered prompt file's types, before the select's value
        kind = saved.get("#lab-type")
        select = self.query_one("#lab-type", Select)
        if kind is not None and kind in [value for _label, value in select._options]:
            select.value = kind
        for selector in FORM_TICKS:
            if selector in saved:
                self.query_one(selector, TickBox).value = saved[selector] == "1"

    def _remember_form(self) -> None:
        values = {s: self.query_one(s, Input).value for s in FORM_FIELDS}
        values.update({s: "1" if self.query_one(s, TickBox).value else "0" for s in FORM_TICKS})
        values["#lab-type"] = str(self.query_one("#lab-type", Select).value)
        save_form(self.session.host or "", "prompt", values)

    def can_run(self, action: str, params: tuple[object, ...] = ()) -> bool:
        return not (action == "run_prompt" and self.session.running)

    @on(Button.Pressed, "#lab-run")
    def _run_pressed(self) -> None:
        self.action_run_prompt()

    @on(Select.Changed, "#lab-type")
    def _type_changed(self, event: Select.Changed) -> None:
        typed = event.value == TYPED
        self.query_one("#lab-typed").display = typed
        self.query_one("#lab-context").disabled = typed

    def action_leave_field(self) -> None:
        self.leave_form()

    @on(Input.Submitted, "#lab-prompts")
    @on(Input.Blurred, "#lab-prompts")
    def _prompt_file_given(self) -> None:
        self._offer_types(notify=True)

    def _offer_types(self, notify: bool = False) -> None:
        """The prompt select offers the builtin types and the prompt file's (read as the
        run will read it, `PromptLibrary.extend_from_file`)."""
        library, path = PromptLibrary.builtin(), self.prompt_file()
        if path:
            try:
                library.extend_from_file(path)
            except ConsoleError as exc:
                if notify:
                    self.notify(str(exc), severity="error")
        select = self.query_one("#lab-type", Select)
        options = [(t, t) for t in library.types] + [("typed prompt", TYPED)]
        if [value for _label, value in select._options] == [v for _l, v in options]:
            return
        keep = select.value
        select.set_options(options)
        if keep in dict(options).values():
            select.value = keep

    def prompt_file(self) -> str:
        return self.query_one("#lab-prompts", Input).value.strip()

    def _request(self) -> dict:
        kind = self.query_one("#lab-type", Select).value
        request = {
            "max_tokens": positive_int(self.query_one("#lab-max", Input).value, "Max tokens"),
            "repeat": positive_int(self.query_one("#lab-repeat", Input).value, "Repeat"),
            "ignore_eos": self.query_one("#lab-ignore-eos", TickBox).value,
            "stream": self.query_one("#lab-stream", TickBox).value,
        }
        if kind == TYPED:
            text = self.query_one("#lab-typed", TextArea).text
            if not text.strip():
                raise ConsoleError("Type a prompt first (or pick a text type from the library).")
            request["text"] = text
        else:
            request["text_type"] = str(kind)
            request["context"] = positive_int(
                self.query_one("#lab-context", Input).value, "Context"
            )
            passage = self.query_one("#lab-passage", Input).value.strip() or "0"
            if not passage.isdigit():
                raise ConsoleError(f"Passage must be a whole number of 0 or more, not {passage!r}.")
            request["first_passage"] = int(passage)
        return request

    def action_run_prompt(self) -> None:
        try:
            request = self._request()
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self._remember_form()
        bar = self.query_one("#lab-progress", ProgressBar)
        bar.display = True
        bar.update(total=request["repeat"], progress=0)
        self.leave_form()  # C must cancel the run, not type into a field
        self.request(RunPrompt(request, prompts=self.prompt_file()))

    def on_action_refused(self, message: ActionRefused) -> None:
        self.query_one("#lab-progress").display = False
        self.query_one("#lab-note", Static).update(message.outcome)

    def on_action_progress(self, message: ActionProgress) -> None:
        self.query_one("#lab-progress", ProgressBar).update(
            total=message.total, progress=message.done
        )

    def on_prompt_ran(self, message: PromptRan) -> None:
        result = message.result
        self.query_one("#lab-progress").display = False
        table = self.query_one("#lab-results", FittedTable)
        self._rows = [(row, None) for row in run_rows(result.points, result.samples)] + getattr(
            self, "_rows", []
        )
        table.set_rows(self._rows)
        table.move_cursor(row=0, animate=False)  # the newest, selected and in view
        table.scroll_home(animate=False)
        last = result.samples[-1] if result.samples else None
        output = self.query_one("#lab-output", TextArea)
        output.load_text(last.text if last else "")
        run = f"stored as run {result.run_id}" if result.run_id is not None else "not stored"
        self.query_one("#lab-note", Static).update(f"{len(result.samples)} request(s), {run}")
        curve = sample_curve(last) if last is not None else None
        summary = pooled_summary(curve) if curve is not None else "no per-round figures"
        self.query_one("#lab-curve-summary", Static).update(Text(f"last request: {summary}"))
        self.show_curve(curve)

    def show_curve(self, curve: RoundCurve | None) -> None:
        """Draw the last request's per-round curve; hide the row where there is none."""
        row = self.query_one("#lab-curve")
        row.set_class(curve is not None and bool(curve.windows), "-shown")
        if curve is None or not curve.windows:
            return
        lines = curve_series(curve)
        self.query_one("#lab-curve-commit", Chart).set_series(lines["commit"])
        self.query_one("#lab-curve-step", Chart).set_series(lines["step"])
