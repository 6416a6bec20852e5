"""The sweeps view's load method: run `load.run_load` (as `specconsole load` does) with
the sweep form's first context, output and text, its repeat as the waves a level, at
concurrency 1, 2, 4 and 8, and show its table in the break-even panel.

A mixin of `SweepsScreen`, like the break-even panel: the run restarts the engine with
speculation off and back (the experiment restores the flags itself), progress in the
sweep row, C cancels. The table is the experiment's own (`load_format.table_lines`); the
screen computes nothing. The view's three charts then put the table's per-stream tok/s,
step time and commit against concurrency, one line per arm, each level's interval as a
bar (`load_series`): where the speculation line meets the plain-decoding one is the
break-even by concurrency.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widgets import Input, Static

from console.analysis.intervals import Interval
from console.analysis.load_format import table_lines
from console.analysis.load_table import LoadLevel, LoadTable
from console.errors import ConsoleError
from console.experiments.load import LEVELS
from console.numbers import parse_count, parse_counts
from console.tui.messages import LoadRan, RunLoad
from console.tui.screens.sweeps_breakeven import begin_restarting_run, end_restarting_run
from console.tui.screens.sweeps_methods import fixed_only
from console.tui.widgets.chart import Chart, ChartSeries

DEFAULT_WAVES = 3  # `specconsole load --waves`'s default


def load_params(
    contexts: str, outputs: str, types: str, repeat: str, target: str = "", most: str = ""
) -> dict:
    """The sweep form's fields as `run_load` takes them: the first context, output and
    text type listed (one of each, as `load --context/--output/--text`), the repeat as
    waves, the CLI's default levels."""
    fixed_only("Load", target, most)

    def first(text: str, what: str, default: int) -> int:
        values = parse_counts(text, what) if text.strip() else [default]
        return values[0]

    names = [t.strip() for t in types.split(",") if t.strip()][:1] or ["code"]
    waves = parse_count(repeat, "Repeat") if repeat.strip() else DEFAULT_WAVES
    if waves < 1:
        raise ConsoleError("Load needs at least one wave a level: set repeat to 1 or more.")
    return {
        "concurrency": list(LEVELS),
        "context": first(contexts, "Contexts", 512),
        "output_tokens": first(outputs, "Output tokens", 64),
        "text_type": names[0],
        "waves": waves,
    }


ARMS = (("speculation", lambda row: row.spec), ("speculation off", lambda row: row.ar))
# (chart, the level's figure, scale): per-stream tok/s, step time in ms, commit
LOAD_CHARTS = (
    ("#sweep-tok", lambda lv: lv.stream_tok_s, 1.0),
    ("#sweep-step", lambda lv: lv.step_s, 1000.0),
    ("#sweep-commit", lambda lv: lv.commit, 1.0),
)


def load_series(
    table: LoadTable, figure: Callable[[LoadLevel], Interval | None], scale: float = 1.0
) -> list[ChartSeries]:
    """One series per arm of the load table, x the concurrency, y `figure(level)` with its
    interval as a bar; an arm (or a figure: plain decoding has no commit) the table lacks
    is left out."""
    out = []
    for label, arm in ARMS:
        pts = [(float(row.concurrency), figure(arm(row))) for row in table.rows
               if arm(row) is not None and figure(arm(row)) is not None]  # fmt: skip
        if pts:
            ys = [(x, iv.value * scale) for x, iv in pts]
            bars = [(iv.low * scale, iv.high * scale) for _, iv in pts]
            out.append(ChartSeries(label, ys, markers=True, spread=bars))
    return out


class LoadPanel:
    """Mixed into `SweepsScreen`: the load run, its table in the break-even panel."""

    def action_load(self) -> None:
        q = self.query_one  # type: ignore[attr-defined]
        try:
            fields = ("contexts", "outputs", "types", "repeat", "target", "max")
            params = load_params(*(q(f"#sweep-{n}", Input).value for n in fields))
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")  # type: ignore[attr-defined]
            return
        levels = ", ".join(map(str, params["concurrency"]))
        note = (f"load on {params['text_type']} at context {params['context']}: concurrency "
                f"{levels}, speculation on, off, on…")  # fmt: skip
        begin_restarting_run(self, note, RunLoad(params, prompts=self.prompt_file()))  # type: ignore[attr-defined]

    def on_load_ran(self, message: LoadRan) -> None:
        result = message.result
        q = self.query_one  # type: ignore[attr-defined]
        end_restarting_run(self, "load", result)
        lines = table_lines(result.table) if result.table is not None else ["no table"]
        q("#breakeven-text", Static).update(Text("\n".join(lines) + "\n"))
        summary = result.table.breakeven.text() if result.table and result.table.breakeven else ""
        q("#breakeven-line", Static).update(f"load run {result.run_id}: {summary}")
        self.set_class(True, "-breakeven")  # type: ignore[attr-defined]
        if result.table is not None:
            for selector, figure, scale in LOAD_CHARTS:
                chart = q(selector, Chart)
                chart.x_label = "concurrency (streams at once)"
                chart.set_series(load_series(result.table, figure, scale))
