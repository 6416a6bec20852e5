"""Where each of the CLI's measurement commands is in the TUI, option by option.

One table, read by the parity test (tests/console/tui/test_cli_parity.py), which walks
`specconsole`'s own parser: every command that measures (it takes `--repeat`, or it is
`set` with its baseline) must have an entry here naming its palette entry (a key id in
keys.py with `palette=True`) and, for every option, the field of that view that sets it
or why the TUI needs none. A new CLI command or option without a TUI place fails it.
`HOST_ACTIONS` names the commands that run on the whole host (`doctor`) and the app-wide
action that runs each.
"""

from __future__ import annotations

from dataclasses import dataclass

# Options that mean nothing in a console session, whatever the command.
SESSION_OPTIONS = {
    "host": "the session's host (connect HOST)",
    "accept_new_host_key": "asked by the host-key modal when the session opens",
    "json": "output format of the CLI; the TUI shows the result and History exports JSON",
    "no_store": "the TUI stores every run (History lists them)",
    # The TUI measures at the session's sampling: the host profile's [sampling] until the
    # sampling dialog (key M, palette "Sampling for this session's measurements")
    # changes it for every measurement of the session, as these options do for one run.
    "temperature": "the session's sampling (the sampling dialog, key M)",
    "top_p": "the session's sampling (the sampling dialog, key M)",
    "top_k": "the session's sampling (the sampling dialog, key M)",
    "sampling_seed": "the session's sampling (the sampling dialog, key M)",
}
# What the TUI does not offer yet, by option: said here so the test names the gap.
NOT_YET: dict[str, str] = {}


# CLI commands that check or act on the host as a whole, run in the TUI as an app-wide
# action (key and palette entry), by its key id in keys.py; every option they take must
# be one of SESSION_OPTIONS, which the session supplies.
HOST_ACTIONS: dict[str, str] = {"doctor": "doctor"}


@dataclass(frozen=True)
class Entry:
    key_id: str  # the palette entry (keys.py)
    view: str  # the app mode it lives in
    options: dict[str, str]  # CLI option dest -> "#widget" in the view, or "=why none"


ENTRIES: dict[str, Entry] = {
    "prompt": Entry("prompt-run", "prompt", {
        "text": "#lab-typed", "text_type": "#lab-type", "context": "#lab-context",
        "max_tokens": "#lab-max", "ignore_eos": "#lab-ignore-eos", "stream": "#lab-stream",
        "repeat": "#lab-repeat", "prompts": "#lab-prompts", "first_passage": "#lab-passage",
    }),
    "sweep": Entry("sweep-run", "sweeps", {
        "contexts": "#sweep-contexts", "outputs": "#sweep-outputs", "output": "#sweep-outputs",
        "context": "#sweep-contexts", "text": "#sweep-types", "repeat": "#sweep-repeat",
        "target_rel": "#sweep-target", "max_repeat": "#sweep-max", "prompts": "#sweep-prompts",
        "stream": "=not streamed: the sweep figures are the engine's (stream check compares)",
    }),
    "twopoint": Entry("sweep-twopoint", "sweeps", {
        "n1": "#sweep-outputs", "n2": "#sweep-outputs", "context": "#sweep-contexts",
        "text_type": "#sweep-types", "repeat": "#sweep-repeat", "prompts": "#sweep-prompts",
    }),
    "streamcheck": Entry("sweep-streamcheck", "sweeps", {
        "context": "#sweep-contexts", "max_tokens": "#sweep-outputs",
        "text_type": "#sweep-types", "repeat": "#sweep-repeat", "prompts": "#sweep-prompts",
    }),
    "diagnose": Entry("sweep-explain", "sweeps", {
        "observed": "#v-observed", "context": "#v-context", "text": "#v-text",
        "baseline": "#v-baseline", "baseline_context": "#v-baseline-context",
        "baseline_text": "#v-baseline-text", "output": "#v-output",
        "observed_requests": "#v-requests", "baseline_output": "#v-baseline-output",
        "baseline_requests": "#v-baseline-requests",
        "window": "=the live figures take the last minute",
        "fresh": "#sweep-run-button", "repeat": "#sweep-repeat", "prompts": "#sweep-prompts",
        "passages": "#v-passages", "settle": "#sweep-settle-button",
        "concurrency": "#v-concurrency", "baseline_concurrency": "#v-baseline-concurrency",
    }),
    "breakeven": Entry("sweep-breakeven", "sweeps", {
        "contexts": "#sweep-contexts", "output": "#sweep-outputs", "text": "#sweep-types",
        "repeat": "#sweep-repeat", "prompts": "#sweep-prompts",
        "seed": "=the CLI's default seed 0",
        "timeout": "=the CLI's default 600 s per restart",
    }),
    "set": Entry("flags-apply", "flags", {
        "assignments": "#flag-value", "dry_run": "=the diff is shown before every apply",
        "yes": "=the confirm modal asks", "baseline": "#flag-baseline",
        "order": "#flag-order", "no_calibrate": "#flag-calibrate", "repeat": "#bl-repeat",
        "target_rel": "#bl-target", "max_repeat": "#bl-max", "baseline_contexts": "#bl-contexts",
        "baseline_output": "#bl-output", "baseline_text": "#bl-text",
        "timeout": "=ready_timeout_s in tui.toml",
        "wait_lock": "=lease_wait_s in tui.toml: an apply waits for another writer's lease "
                     "that long, a notification naming the holder",
    }),
}  # fmt: skip
