"""`set --baseline-contexts/--baseline-output/--baseline-text`: this run's baseline.

The host profile's `[baseline]` table sets the default points (console/config.py); these
options override them for one `set`, and any of them implies `--baseline`.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.commands.sampling_options import add_sampling_options
from console.numbers import NumberListError, parse_count, parse_counts


def _contexts(text: str) -> list[int]:
    try:
        return parse_counts(text, "Each baseline context")
    except NumberListError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _output(text: str) -> int:
    try:
        return parse_count(text, "The baseline output")
    except NumberListError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _types(text: str) -> list[str]:
    kinds = [v.strip() for v in text.split(",") if v.strip()]
    if not kinds:
        raise argparse.ArgumentTypeError("give at least one text type, e.g. code,prose")
    return kinds


def baseline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline-contexts", type=_contexts, metavar="N,N",
        help="baseline prompt lengths (default: the profile's, else 256 and ~90%% of the "
        "context length)",
    )  # fmt: skip
    p.add_argument("--baseline-output", type=_output, metavar="N",
                   help="baseline output tokens per request (default 96)")  # fmt: skip
    p.add_argument("--baseline-text", type=_types, metavar="TYPES",
                   help="baseline text types (default code,prose)")  # fmt: skip
    add_sampling_options(p, what="the baseline (both arms)")


def baseline_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The overrides given, as `baseline_plan` takes them; empty when none was."""
    given = {
        "contexts": getattr(args, "baseline_contexts", None),
        "output": getattr(args, "baseline_output", None),
        "text_types": getattr(args, "baseline_text", None),
    }
    return {k: v for k, v in given.items() if v is not None}
