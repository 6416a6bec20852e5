"""SGLang (`python -m sglang.launch_server`), including the DFlash/DDTree flags.

Speculation is on when `--speculative-algorithm` is given; unsetting every
`speculative-*` flag switches it off (SGLang then decodes without speculation, and the
drafter flags go with the algorithm).
"""

from __future__ import annotations

from typing import Any, ClassVar

from console.analysis.records import LiveSample
from console.backends.adapter import EngineAdapter, Speculation
from console.backends.advice import FlagAdvice
from console.backends.notes import SGLANG_NOTES
from console.backends.request import RequestFigures, RequestSpec
from console.backends.sglang import doctor, live, request
from console.backends.sglang.logparse import (
    SGLANG_READY,
    parse_sglang_decode,
    parse_sglang_prefill,
)
from console.backends.wire import MetricsScrape, TimedResponse
from console.config import FlagValue

OFF_VALUES = (None, "", "None")


def _int(value: FlagValue | None) -> int | None:
    try:
        return int(str(value)) if value not in (None, "") else None
    except ValueError:
        return None


class SGLangAdapter(EngineAdapter):
    kind = "sglang"
    module = ("-m", "sglang.launch_server")
    # The uvicorn line comes first, but SGLang only serves after its warmup request,
    # which ends with its own ready line.
    ready_markers = (SGLANG_READY,)
    notes = SGLANG_NOTES
    log_parsers = (parse_sglang_decode, parse_sglang_prefill)
    # SGLang's (and so the bundled engine's) parser names for a Qwen3 model
    parser_flags: ClassVar[dict[str, str]] = {
        "tool-call-parser": "qwen25",
        "reasoning-parser": "qwen3",
    }
    default_bind = "127.0.0.1"  # ServerArgs.host's default

    dists = ("sglang",)
    package = "sglang"
    flags_source = "srt/server_args.py"
    parser_modules: ClassVar[dict[str, tuple[str, ...]]] = {
        "ServerArgs": ("sglang.srt.server_args:ServerArgs",)
    }

    # -- logs and /metrics
    def live_from_log(self, line: str, when: float) -> LiveSample | None:
        return live.sample_from_decode_line(line, when)

    def owns_scrape(self, scrape: MetricsScrape) -> bool:
        return live.owns_scrape(scrape)

    def live_from_scrapes(self, prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
        return live.sample_from_scrapes(prev, cur)

    # -- requests: the native /generate
    request_endpoint = request.ENDPOINT

    def request_body(self, spec: RequestSpec, model: str) -> dict[str, Any]:
        return request.native_body(spec)

    def response_figures(
        self,
        response: TimedResponse,
        before: MetricsScrape | None = None,
        after: MetricsScrape | None = None,
    ) -> RequestFigures:
        return request.native_figures(response)

    def stream_tokens(self, data: dict[str, Any], seen: int) -> int:
        return request.native_stream_tokens(data, seen)

    # -- speculation
    def speculation(self, flags: dict[str, FlagValue]) -> Speculation:
        method = flags.get("speculative-algorithm")
        if method in OFF_VALUES:
            return Speculation(None)
        drafter = flags.get("speculative-draft-model-path")
        return Speculation(
            str(method),
            _int(flags.get("speculative-num-draft-tokens")),
            str(drafter) if drafter not in (None, "") else None,
        )

    def speculation_off(self, flags: dict[str, FlagValue]) -> dict[str, str | None]:
        return {name: None for name in flags if name.startswith("speculative-")}

    # -- doctor
    drafter_methods = doctor.DRAFTER_METHODS
    drafter_where = doctor.DRAFTER_WHERE
    spec_counters = doctor.SPEC_COUNTERS
    spec_counters_missing = doctor.COUNTERS_MISSING
    spec_counters_fix = doctor.COUNTERS_FIX

    def metrics_advice(self, flags: dict[str, FlagValue]) -> FlagAdvice | None:
        return doctor.metrics_advice(flags)
