"""The sweeps view's verdict panel: the stored model, the typed or live observed figure,
and the verdict on it (`measure.verdict.judge`, the same as `specconsole diagnose`).

A mixin of `SweepsScreen`, kept apart so the screen's sweep form and this panel each fit
on a screen; it reads the widgets the screen composes (`#verdict`, `#v-*`, the sweep
form it fills with an offered sweep).
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import work
from textual.widgets import Input, Select, Static

from console.analysis import format as fmt
from console.analysis.decompose import FitError, ThroughputModel, fit
from console.analysis.live_window import LiveWindow, explain_live, live_window
from console.analysis.records import RequestSample, flags_hash
from console.analysis.typed_noise import NoiseProfile
from console.analysis.verdict import (
    Judgement,
    Observed,
    Sweep,
    guess_type,
    typed_baseline,
    typed_verdict,
)
from console.errors import ConsoleError
from console.experiments.typed_noise_source import calibration_profile
from console.tui.messages import RunSettle, SettleRan


def model_text(model: ThroughputModel, source: str) -> Text:
    text = Text()
    text.append(f"model from {source}\n", style="bold")
    for line in model.describe():
        text.append(line + "\n", style="italic" if line.startswith("note: ") else "")
    return text


OUTCOME_STYLE = {"physics": "bold green", "not physics": "bold red"}


def answer_text(outcome: str, lines: list[str]) -> Text:
    """An answer's lines as the panel shows them, the headline in its outcome's style."""
    text = Text(lines[0] + "\n", style=OUTCOME_STYLE.get(outcome, "bold"))
    text.append("\n".join(lines[1:]))
    return text


def verdict_text(verdict: Judgement, source: str) -> Text:
    """The verdict as the panel shows it: the same lines `specconsole diagnose` prints."""
    style = OUTCOME_STYLE.get(verdict.outcome, "bold")
    text = Text()
    text.append(verdict.headline + "\n", style=style)
    for line in verdict.text().splitlines()[1:]:
        text.append(line + "\n")
    text.append(f"(model from {source})", style="dim")
    return text


def settled_text(settled) -> Text:
    """A settling run as the panel shows it: the same lines `diagnose --settle` prints."""
    style = OUTCOME_STYLE.get(settled.verdict.outcome, "bold")
    lines = settled.text().splitlines()
    text = Text()
    text.append(lines[0] + "\n", style=style)
    text.append("\n".join(lines[1:]), style="")
    return text


class VerdictPanel:
    """The verdict half of the sweeps view (see the module docstring)."""

    model: ThroughputModel | None
    model_source: str
    sweep: Sweep | None
    _live: LiveWindow | None
    _noise: NoiseProfile | None = None  # the host's calibration, as typed noise

    def show_verdict(self, text: Text | str) -> None:
        """The panel's text, read from its top: the newest result's headline in view,
        wherever the previous one had been scrolled to."""
        self.query_one("#verdict", Static).update(text)
        self.query_one("#verdict-scroll").scroll_home(animate=False)

    # -- the stored model -------------------------------------------------------------

    @work(group="sweep-model", exclusive=True, exit_on_error=False)
    async def _load_stored_model(self) -> None:
        session = self.session
        if session.service is None:
            return
        # The newest sweep over two contexts or more with the flags in force: a one-context
        # baseline run is a context sweep by method but no model ("No model yet").
        config = session.status.config if session.status is not None else None
        flags = flags_hash(dict(config.flags)) if config is not None else None
        try:
            store = session.run_store()
            host = session.service.profile.name
            # Typed figures carry the host's calibrated noise where `calibrate` stored
            # one for these flags, as `specconsole diagnose` gives them.
            self._noise = await calibration_profile(store, host, flags or "")
            run = await store.latest_sweep(host, flags_hash=flags)
        except Exception:
            return  # no history yet: the verdict waits for a sweep
        if run is None or self.model is not None:
            return
        try:
            model = fit(run.requests)
        except FitError:
            return
        from console.analysis.stats import summarize

        self._show_points(summarize(run.requests), "context")
        self._set_model(
            model, f"stored sweep run {run.id} (flags {run.info.flags_hash})", run.requests
        )

    def _set_model(
        self, model: ThroughputModel, source: str, samples: tuple[RequestSample, ...] | list = ()
    ) -> None:
        self.model, self.model_source = model, source
        host = self.session.service.profile.name if self.session.service else "HOST"
        self.sweep = Sweep(tuple(samples), host, self._context_limit(),
                           noise_profile=self._noise)  # fmt: skip
        self.show_verdict(model_text(model, source))

    def _context_limit(self) -> int | None:
        info = self.session.server_info or {}
        limit = info.get("context_length") or info.get("max_model_len")
        return int(limit) if isinstance(limit, int | float) and limit > 0 else None

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
        try:
            streams = (
                self._count("#v-concurrency", "number of streams"),
                self._count("#v-baseline-concurrency", "baseline number of streams"),
            )
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        if any(n is not None for n in streams):
            self._explain_load(streams[0] or 1, streams[1] or 1)
            return
        if self.model is None or self.sweep is None:
            self.notify(f"No model yet: run a context sweep first ({self.key_for('sweep-run')}).",
                        severity="warning")  # fmt: skip
            return
        try:
            verdict = self._verdict(self.model)
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self.show_verdict(verdict_text(verdict, self.model_source))
        self._offer_settle(verdict.settle)
        if verdict.settle is not None:
            plan = verdict.settle
            key = self.key_for("sweep-settle")
            self.notify(f"The passages your figures read leave it open: {key} settles it"
                        f" (both points on {plan.passages} passages, "
                        f"{plan.requests()} requests).", severity="warning")  # fmt: skip
        if verdict.offer_contexts:
            # The offer to sweep: the contexts it needs go into the sweep form, so ctrl+r
            # runs exactly the sweep the verdict asks for.
            self.query_one("#sweep-kind", Select).value = "context"
            self.query_one("#sweep-contexts", Input).value = ",".join(
                str(c) for c in verdict.offer_contexts
            )
            self.query_one("#sweep-types", Input).value = ",".join(verdict.offer_text_types)
            repeat = self.query_one("#sweep-repeat", Input)
            if not repeat.value.strip().isdigit() or int(repeat.value) < 3:
                repeat.value = "3"  # one request a point gives the verdict no spread
            self.notify("The verdict needs a sweep first: the contexts are filled in; ctrl+r "
                        "runs it.", severity="warning")  # fmt: skip

    def _verdict(self, model: ThroughputModel) -> Judgement:
        sweep = self.sweep or Sweep(())
        typed_text = self.query_one("#v-text", Input).value.strip()
        b_text = self.query_one("#v-baseline-text", Input).value.strip() or None
        for kind in (typed_text, b_text):
            if kind and kind not in model.commit:
                known = ", ".join(model.commit)
                raise ConsoleError(f"The sweep has no {kind!r} text; it measured {known}.")
        baseline = self._number("#v-baseline", "baseline tok/s", required=False)
        b_context = self._number("#v-baseline-context", "baseline prompt length", required=False)
        b_output = self._count("#v-baseline-output", "baseline output tokens")
        b_requests = self._count("#v-baseline-requests", "baseline request count") or 1
        if self._live is not None:
            # The live window's own figures, as `specconsole diagnose` explains them.
            base = typed_baseline(sweep, baseline, b_context, b_text, output=b_output,
                                  requests=b_requests)  # fmt: skip
            return explain_live(
                sweep, self._live, text_type=typed_text or None, baseline=baseline,
                baseline_context=b_context, baseline_text=b_text, baseline_figure=base,
            ).verdict  # fmt: skip
        # The same function `specconsole diagnose --observed` calls (and `bench verdict`
        # scores): prompt lengths as typed, each figure with this host's noise at its point.
        passages = self._passages()
        return typed_verdict(
            sweep, self._number("#v-observed", "observed tok/s") or 0.0,
            self._number("#v-context", "prompt length it was observed at") or 0.0,
            typed_text or next(iter(model.commit)),
            output=self._count("#v-output", "output tokens"),
            requests=self._count("#v-requests", "request count") or 1,
            baseline=baseline, baseline_prompt=b_context, baseline_text=b_text,
            baseline_output=b_output, baseline_requests=b_requests,
            held_out=passages != "sweep", same_prompts=passages == "same",
        )  # fmt: skip

    @work(group="sweep-load-verdict", exclusive=True, exit_on_error=False)
    async def _explain_load(self, at_n: int, from_n: int) -> None:
        """`diagnose --concurrency`: the typed pair through the stored load run's factor."""
        from console.experiments.load import typed_load_verdict

        session = self.session
        config = session.status.config if session.status is not None else None
        if session.service is None or config is None:
            self.notify("No host state yet: the load factor needs the flags in force.",
                        severity="warning")  # fmt: skip
            return
        try:
            observed = self._number("#v-observed", "observed tok/s") or 0.0
            baseline = self._number("#v-baseline", "baseline tok/s (alone, or at its streams)")
            verdict = await typed_load_verdict(
                session.run_store(), session.service.profile.name,
                flags_hash(dict(config.flags)), observed=observed, at_n=at_n,
                baseline=baseline or 0.0, from_n=from_n,
                observed_requests=self._count("#v-requests", "request count") or 1,
                baseline_requests=self._count("#v-baseline-requests",
                                              "baseline request count") or 1,
                sampling=session.service.profile.sampling,
            )  # fmt: skip
        except ConsoleError as exc:
            self.notify(str(exc), severity="error")
            return
        self.show_verdict(answer_text(verdict.outcome, verdict.lines()))

    def _passages(self) -> str:
        """`--passages`: what the typed figures were measured on, "own" (blank), "same"
        (your prompts, re-sent for both) or "sweep"."""
        value = self.query_one("#v-passages", Input).value.strip().lower() or "own"
        if value not in ("own", "same", "sweep"):
            raise ConsoleError(
                f"'on' says what the figures were measured on: own (your prompts), same "
                f"(your prompts re-sent for both) or sweep (the sweep's passages), not "
                f"{value!r}."
            )
        return value

    # -- settle ---------------------------------------------------------------------

    def _offer_settle(self, plan) -> None:
        """Keep the plan the last verdict offered, its button shown while there is one."""
        self._settle = plan
        self.query_one("#sweep-settle-button").display = plan is not None

    def action_settle(self) -> None:
        """`diagnose --settle`: the measurement the last verdict offered."""
        plan = getattr(self, "_settle", None)
        if plan is None:
            self.notify("Nothing to settle: the last verdict offered no settling measurement "
                        f"(typed figures on your own prompts, {self.key_for('sweep-explain')}).",
                        severity="warning")  # fmt: skip
            return
        bar = self.query_one("#sweep-progress")
        bar.display = True
        bar.update(total=plan.requests(), progress=0)
        self.show_note(f"settling: prompts {', '.join(map(str, plan.prompts))} x "
                       f"{', '.join(plan.text_types)} on {plan.passages} passages…")  # fmt: skip
        self.leave_form()
        self.request(RunSettle(plan, profile=self._noise, limit=self._context_limit()))

    def on_settle_ran(self, message: SettleRan) -> None:
        settled = message.result
        self.query_one("#sweep-progress").display = False
        self._offer_settle(None)
        self.show_note(f"settled (run {settled.run_id})")
        self.show_verdict(settled_text(settled))

    def _count(self, selector: str, what: str) -> int | None:
        """A whole number from a verdict field, or None when it is blank."""
        value = self._number(selector, what, required=False)
        if value is None:
            return None
        if value < 1 or value != int(value):
            raise ConsoleError(f"The {what} must be a whole number of at least 1, not {value:g}.")
        return int(value)

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
            guess = guess_type(self.model, Observed.from_live(
                window.pairs, tok_s=window.tok_s, commit=window.commit, step_s=window.step_s,
                context=window.context))  # fmt: skip
            kinds = " or ".join(guess.candidates) if guess and guess.candidates else "none swept"
            resembles = f"; text resembles {kinds}"
        self.notify(
            f"Observed from {window.n} live samples "
            f"(newest {fmt.age(time.time() - window.newest)}){resembles}."
        )
