"""The sweeps view's break-even panel: run `breakeven.run_breakeven` (as `specconsole
breakeven` does) with the sweep form's contexts, output and text, and show its table,
and the newest stored runs.

A mixin of `SweepsScreen`, like the verdict panel. The break-even run restarts the
engine with speculation off and back through the normal apply path (the experiment
restores the flags itself, cancel included), so it runs as an action of its own: one at
a time, progress in the sweep row, C cancels. The table and the verdict per context are
the experiment's own (`table_lines`, each row's verdict); the screen computes nothing.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import work
from textual.widgets import Input, ProgressBar, Select, Static

from console.errors import ConsoleError
from console.experiments import breakeven
from console.numbers import parse_count, parse_counts
from console.tui.messages import BreakevenRan, RunBreakeven
from console.tui.screens.sweeps_methods import fixed_only

BREAKEVEN_RUNS = 3  # the newest break-even runs shown
DEFAULT_REPEAT = 3  # `specconsole breakeven --repeat`'s default


def row_verdict(row: breakeven.BreakevenRow) -> str:
    """The experiment's verdict on one context, as words: its own `verdict` where it
    gives one (pays / not sure / does not pay), else its `pays`."""
    verdict = getattr(row, "verdict", None)
    if verdict is None:
        verdict = row.pays
    if isinstance(verdict, str):
        return verdict
    return "pays" if verdict else "does not pay"


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


def breakeven_line(run_id: int | None, rows: list) -> str:
    """A break-even run in one line: the speedup and the verdict per context."""
    if not rows:
        return f"break-even run {run_id}: no table (the run did not finish)"
    cells = ", ".join(
        f"ctx {r.context} x{r.speedup.value:.2f} [{r.speedup.low:.2f}-{r.speedup.high:.2f}] "
        f"{row_verdict(r)}"
        for r in rows
    )
    return f"break-even run {run_id}: {cells}; taller window: table"


def breakeven_params(
    contexts: str, outputs: str, types: str, repeat: str, target: str = "", most: str = ""
) -> dict:
    """The sweep form's fields as `run_breakeven` takes them (one output; the first
    text type listed; a fixed repeat, as `breakeven --repeat`)."""
    fixed_only("Break-even", target, most)
    output = parse_counts(outputs, "Output tokens")
    # One text type, as `breakeven --text`: the form's first (its default lists two).
    names = [t.strip() for t in types.split(",") if t.strip()][:1] or ["code"]
    if len(output) != 1:
        raise ConsoleError(
            "Break-even takes one output length (as `specconsole breakeven --output N`); "
            "list contexts only."
        )
    return {
        "contexts": parse_counts(contexts, "Contexts"),
        "output_tokens": output[0],
        "text_type": names[0],
        "repeat": parse_count(repeat, "Repeat") if repeat.strip() else DEFAULT_REPEAT,
    }


def begin_restarting_run(screen: Any, note: str, request: Any) -> None:
    """Start a run that restarts the engine between its arms (break-even, load): the
    progress bar spins, the note says what it does, the form folds, the app runs it."""
    bar = screen.query_one("#sweep-progress", ProgressBar)
    bar.display = True
    bar.update(total=None, progress=0)
    screen.show_note(note)
    screen.leave_form()
    screen.request(request)


def end_restarting_run(screen: Any, label: str, result: Any) -> None:
    """Such a run's answer: the bar goes; the note names the run and whether the engine
    is back on its flags."""
    screen.query_one("#sweep-progress").display = False
    state = "flags restored" if result.restored else "flags NOT restored: see Flags (f)"
    stored = f"run {result.run_id}" if result.run_id is not None else "not stored"
    sampling = result.params.get("sampling", "greedy")
    screen.show_note(f"{label} done ({stored}, {sampling}, {state})")


class BreakevenPanel:
    """Mixed into `SweepsScreen`: the break-even run and the stored runs' tables."""

    def mount_breakeven(self) -> None:
        title = "break-even: commit needed vs measured per context (b runs one)"
        self.query_one("#breakeven-panel").border_title = title  # type: ignore[attr-defined]
        self._load_breakeven()

    def on_screen_resume(self) -> None:
        # `specconsole breakeven` runs from a shell: look again whenever the view shows.
        self._load_breakeven()

    @work(group="sweep-breakeven", exclusive=True, exit_on_error=False)
    async def _load_breakeven(self) -> None:
        session = self.session  # type: ignore[attr-defined]
        if session.service is None:
            return
        try:
            runs = await session.run_store().runs(
                host=session.service.profile.name, method=breakeven.METHOD, limit=BREAKEVEN_RUNS
            )
        except Exception:
            return  # no history yet: nothing to show
        self.set_class(bool(runs), "-breakeven")  # type: ignore[attr-defined]
        if runs:
            self.query_one("#breakeven-text", Static).update(breakeven_text(runs))  # type: ignore[attr-defined]
            rows = breakeven.stored_rows(runs[0].summary)
            self.query_one("#breakeven-line", Static).update(breakeven_line(runs[0].id, rows))  # type: ignore[attr-defined]

    def action_breakeven(self) -> None:
        q = self.query_one  # type: ignore[attr-defined]
        if str(q("#sweep-kind", Select).value) != "context":
            self.notify("Break-even runs over contexts: choose the context sweep.")  # type: ignore[attr-defined]
            return
        try:
            fields = ("contexts", "outputs", "types", "repeat", "target", "max")
            params = breakeven_params(*(q(f"#sweep-{n}", Input).value for n in fields))
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")  # type: ignore[attr-defined]
            return
        note = f"break-even on {params['text_type']} text: speculation on, then off, then on…"
        begin_restarting_run(self, note, RunBreakeven(params, prompts=self.prompt_file()))  # type: ignore[attr-defined]

    def on_breakeven_ran(self, message: BreakevenRan) -> None:
        result = message.result
        q = self.query_one  # type: ignore[attr-defined]
        end_restarting_run(self, "break-even", result)
        text = Text("\n".join(breakeven.table_lines(result.rows)) + "\n")
        q("#breakeven-text", Static).update(text)
        q("#breakeven-line", Static).update(breakeven_line(result.run_id, result.rows))
        self.set_class(True, "-breakeven")  # type: ignore[attr-defined]
