"""Our bundled engine (`python -m engine.cli serve`): SGLang flag names and log format, the
native `/generate` with each round's context and step time, and its own counters.

Unset `--speculative-algorithm` means the engine's default, DDTREE; `NONE` is its plain
autoregressive decoder, which is how speculation is switched off.
"""

from __future__ import annotations

from typing import Any, ClassVar

from console.analysis.records import LiveSample
from console.backends.adapter import Speculation
from console.backends.advice import FlagAdvice
from console.backends.builtin import live
from console.backends.request import RequestSpec
from console.backends.sglang import request
from console.backends.sglang.adapter import SGLangAdapter, _int
from console.backends.wire import MetricsScrape
from console.config import FlagValue

DEFAULT_ALGORITHM = "DDTREE"


class BuiltinAdapter(SGLangAdapter):
    kind = "builtin"
    module = ("-m", "engine.cli", "serve")

    dists = ("specconsole",)
    package = "engine"
    flags_source = "serve/args.py"
    parser_modules: ClassVar[dict[str, tuple[str, ...]]] = {
        "build_parser": ("engine.serve.args:build_parser",),
        "check_static": ("engine.serve.args:check_static",),
    }

    default_bind = "127.0.0.1"  # engine/serve/args.py: --host defaults to loopback
    pin_loopback = False

    reports_round_stats = True
    tree_budget_flag = "speculative-ddtree-budget"
    round_slowdown_flag = "debug-round-slowdown"  # engine/serve/args.py: for bench verdict
    fits_side_by_side = True  # the bundled pair is a few MB; two engines share a laptop

    def owns_scrape(self, scrape: MetricsScrape) -> bool:
        return live.owns_scrape(scrape)

    def live_from_scrapes(self, prev: MetricsScrape, cur: MetricsScrape) -> LiveSample | None:
        return live.sample_from_scrapes(prev, cur)

    def request_body(self, spec: RequestSpec, model: str) -> dict[str, Any]:
        return request.native_body(spec, round_stats=True)

    def speculation(self, flags: dict[str, FlagValue]) -> Speculation:
        method = str(flags.get("speculative-algorithm", DEFAULT_ALGORITHM))
        if method.upper() == "NONE":
            return Speculation(None)
        drafter = flags.get("speculative-draft-model-path")
        return Speculation(
            method,
            _int(flags.get("speculative-num-draft-tokens")),
            str(drafter) if drafter not in (None, "") else None,
        )

    def speculation_off(self, flags: dict[str, FlagValue]) -> dict[str, str | None]:
        return {"speculative-algorithm": "NONE"}

    # -- doctor: /metrics is always on (--enable-metrics is accepted and changes nothing),
    # and the bundled drafter is the default of every method that drafts
    drafter_methods = frozenset()
    spec_counters = (live.OURS_STEPS, live.OURS_COMMITTED)
    spec_counters_missing = "this engine build exposes no spec-decode counters"
    spec_counters_fix = "run the engine bundled with this console"

    def metrics_advice(self, flags: dict[str, FlagValue]) -> FlagAdvice | None:
        return None
