"""The sweeps view's methods: what its form's fields mean for each one, as the CLI takes
them (`sweep --contexts`, `sweep --outputs`, `twopoint`, `streamcheck`).

The form is the same for all four (contexts, output tokens, text types, repeat); the
method select says which measurement Run starts:

  context       every context, one output length, each text type (`sweep --contexts`)
  output        one context, every output length (`sweep --outputs`)
  two-point     one context, the two output lengths N1,N2, one text type (`twopoint`)
  stream check  one context, one output length, one text type (`streamcheck`)

Blank repeat is each command's own default. The context sweep also takes `sweep`'s
`--target-rel` and `--max-repeat` (the "± target" and "max repeat" fields), read by the
CLI's own rule (`analysis.repeat_rule`); the other methods repeat a fixed count, as their
commands do, so a typed target there is refused instead of ignored.
"""

from __future__ import annotations

from typing import Any

from console.analysis.repeat_rule import model_sweep_rule, parse_fraction
from console.analysis.sample_size import SampleTarget
from console.errors import ConsoleError
from console.experiments.method_lines import stream_check_lines, two_point_lines
from console.measure.methods import MethodResult
from console.numbers import parse_count, parse_counts

METHODS = (("context sweep", "context"), ("output sweep", "output"),
           ("two-point", "two-point"), ("stream check", "stream check"))  # fmt: skip
SWEEPS = ("context", "output")  # the methods that chart points and fit a model
DEFAULT_REPEAT = 3  # `twopoint` and `streamcheck`'s --repeat default


def type_list(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise ConsoleError("Give at least one text type (e.g. code,prose).")
    return names


def sweep_repeat(text: str, target: str = "", most: str = "") -> tuple[int, SampleTarget]:
    """(repeat, target) as `specconsole sweep` takes `--repeat`, `--target-rel` and
    `--max-repeat`: all blank is its default, repeat each point until its tok/s interval
    is within ± 5% (at least 3, at most 10); a repeat alone is exactly that many."""
    repeat = parse_count(text, "Repeat") if text.strip() else None
    ceiling = parse_count(most, "Max repeat") if most.strip() else None
    rule = model_sweep_rule(repeat, parse_fraction(target, "The ± target"), ceiling)
    return repeat or 1, rule


def fixed_only(method: str, target: str, most: str) -> None:
    """Refuse a noise target where the method repeats a fixed count (its command has no
    --target-rel): one sentence, instead of ignoring what was typed."""
    if target.strip() or most.strip():
        raise ConsoleError(
            f"{method} repeats a fixed count (its command has no --target-rel): clear "
            "± target and max repeat, or set repeat."
        )


def _one(values: list, what: str, method: str) -> Any:
    if len(values) != 1:
        raise ConsoleError(f"{method} takes one {what}; give one value.")
    return values[0]


def method_params(
    kind: str,
    contexts: str,
    outputs: str,
    types: str,
    repeat: str,
    target: str = "",
    most: str = "",
) -> dict:
    """The form's fields as keyword arguments of the method `kind` runs; a ConsoleError
    with one sentence for a bad or missing value."""  # fmt: skip
    ctx = parse_counts(contexts, "Contexts")
    out = parse_counts(outputs, "Output tokens")
    names = type_list(types)
    if kind == "context":
        reps, rule = sweep_repeat(repeat, target, most)
        if len(out) != 1:
            raise ConsoleError("A context sweep takes one output length; list contexts instead.")
        return {"contexts": ctx, "output_tokens": out[0], "text_types": names,
                "repeat": reps, "target": rule}  # fmt: skip
    fixed_only({"output": "An output sweep"}.get(kind, kind.capitalize()), target, most)
    if kind == "output":
        if len(ctx) != 1:
            raise ConsoleError("An output sweep takes one context; list output lengths instead.")
        # As `specconsole sweep --outputs`: a fixed count (no noise target), 1 by default.
        reps = parse_count(repeat, "Repeat") if repeat.strip() else 1
        return {"outputs": out, "context": ctx[0], "text_types": names, "repeat": reps}
    reps = parse_count(repeat, "Repeat") if repeat.strip() else DEFAULT_REPEAT
    common = {"context": _one(ctx, "context", kind),
              "text_type": _one(names, "text type", kind), "repeat": reps}  # fmt: skip
    if kind == "two-point":
        if len(out) != 2:
            raise ConsoleError("Two-point takes two output lengths N1,N2 (e.g. 32,160).")
        return {"n1": out[0], "n2": out[1], **common}
    return {"max_tokens": _one(out, "output length", kind), **common}


def result_lines(kind: str, params: dict, result: MethodResult) -> list[str]:
    """What `specconsole twopoint` / `streamcheck` print for this result."""
    if kind == "two-point":
        return two_point_lines(result, params["n1"], params["n2"])
    return stream_check_lines(result)
