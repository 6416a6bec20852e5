"""What the console reads from the engine while it runs: `/metrics` served and parsed
(SGLang only with `--enable-metrics`: the adapter says which flag serves it), the
spec-decode counters on that page, and log lines in a format the engine's own log
parsers recognise (a live line parsed as `watch` parses it)."""

from __future__ import annotations

from console.analysis.records import LiveSample
from console.doctor.check import Check, fail, ok, skip, warn
from console.doctor.findings import Findings
from console.errors import ConsoleError

LOG_LINES = 200  # how far back the log is read


async def reading_checks(found: Findings) -> list[Check]:
    return [await _metrics(found), _counters(found), await _log_format(found)]


async def _metrics(found: Findings) -> Check:
    host, kind = found.host, found.backend.kind
    advice = found.backend.metrics_advice(found.flags)
    if advice is not None:
        return fail("metrics", advice.problem,
                    f"`{advice.set_command(host)}` adds it (the engine restarts)")  # fmt: skip
    if not found.ready:
        return skip("metrics", "the engine is not ready: /metrics is read from a running one")
    try:
        scrape = await (await found.service.client()).metrics()
    except ConsoleError as exc:
        return fail("metrics", str(exc).rstrip("."),
                    f"`specconsole logs {host}` shows what the engine says")  # fmt: skip
    found.scrape = scrape
    series = len(scrape.samples)
    if not found.backend.owns_scrape(scrape):
        return warn(
            "metrics",
            f"/metrics parsed ({series} series), but none of {kind}'s own series is on it",
            "check that the profile's engine kind is what runs on its port",
        )
    return ok("metrics", f"/metrics served and parsed: {series} series, {kind}'s own")


def _counters(found: Findings) -> Check:
    backend = found.backend
    if found.scrape is None:
        return skip("spec-counters", "no /metrics page was read")
    if not backend.speculating(found.flags):
        return skip("spec-counters", "speculation is off in the launch config")
    have = [name for name in backend.spec_counters if name in found.scrape.samples]
    missing = [name for name in backend.spec_counters if name not in found.scrape.samples]
    if not missing:
        return ok("spec-counters", f"present: {', '.join(have)}")
    return warn(
        "spec-counters",
        f"missing {', '.join(missing)}: {backend.spec_counters_missing}",
        backend.spec_counters_fix,
    )


async def _log_format(found: Findings) -> Check:
    backend = found.backend
    try:
        lines = await (await found.service.supervisor()).log_tail(LOG_LINES)
    except ConsoleError as exc:
        return fail("log-format", f"the log could not be read: {str(exc).rstrip('.')}",
                    "check the profile's supervisor settings")  # fmt: skip
    lines = [line for line in lines if line.strip()]
    if not lines:
        return skip("log-format", "no log yet: the engine has not run")
    events = [event for line in lines if (event := backend.parse_log(line)) is not None]
    live = [s for line in lines if (s := backend.live_from_log(line, 0.0)) is not None]
    if not events and not live:
        return warn(
            "log-format",
            f"none of the last {len(lines)} log lines is in a format {backend.kind} writes "
            "(loading bar, ready line, decode stats)",
            "keep the engine's default log format at level info (a custom logging config "
            "hides the lines the console reads)",
        )
    latest = type(events[-1]).__name__ if events else "a live line"
    text = f"{len(events)} of the last {len(lines)} lines recognised (latest: {latest})"
    if live:
        text += f"; a live line parsed: {_live_text(live[-1])}"
    return ok("log-format", text)


def _live_text(sample: LiveSample) -> str:
    parts = []
    if sample.tok_s is not None:
        parts.append(f"{sample.tok_s:.1f} tok/s")
    if sample.commit_len is not None:
        parts.append(f"commit {sample.commit_len:.2f}")
    if sample.context_tokens is not None:
        parts.append(f"ctx {sample.context_tokens}")
    return ", ".join(parts) or "no figures"


def skipped(reason: str) -> list[Check]:
    return [skip(name, reason) for name in ("metrics", "spec-counters", "log-format")]
