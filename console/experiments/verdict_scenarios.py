"""The verdict benchmark's scenarios: changes whose true cause is known by construction,
and the operator paths each one is asked through.

  null          the same engine, context and text twice            -> physics
  null-long     the same on prose at the long context               -> physics
  context       the same text, context 256 -> 1800                 -> physics
  text          code -> prose at the same context                  -> physics
  field-report  code at a short context -> prose at a long one      -> physics (both
                ("it was 138, now it is 32")                          factors at once)
  field-report-1024, field-report-512
                the same question at two other context pairs         -> physics
  spec-off      speculation switched off (a flag)                  -> not physics
  tree-budget   a DDTree budget of 3 instead of the drafter's 15   -> not physics
  parsers       tool-call and reasoning parsers on, across a       -> physics (they act on
                restart: they cannot move decode speed                the response text only)
  round-delay   every verify round 30% longer than its own compute -> not physics (a
                (the bundled engine's --debug-round-slowdown), same   step-time regression:
                flags otherwise, same context and passages            tok/s x 1/1.3, -23%)
  tree-moderate a DDTree budget of 8: a moderate acceptance change -> not physics

Paths: `typed` (the figures typed into `diagnose`, measured on the sweep's passages),
`typed-own` (typed from `prompt --repeat 3` on passages the sweep never read, settled
when the answer offers it: the operator's own question), `explain` (`history explain A B` on
the stored runs), and for the scenarios that change a flag `set --baseline` three ways:
`baseline` (default options: side by side where the host holds both engines),
`baseline-ab` (`--order A-B`) and `baseline-abab` (`--bracket`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from console.analysis.verdict_records import Outcome
from console.analysis.verdict_scoring import PATHS
from console.backends import get_adapter
from console.config import FlagValue
from console.experiments.breakeven import speculation_off
from console.measure.session import MeasureError

TREE_BUDGET = 3  # the regression: the drafter's default is its block size minus 1 (15)
TREE_MODERATE = 8  # a budget that changes acceptance moderately
# The round delay, as a share of each round's own compute: step time x1.3 at least, tok/s
# x 1/1.3 (-23%) or more however fast the host runs that minute (-24% to -30% measured
# side by side: a sleeping round's threads wake again). (A fixed delay sized from the run's
# sweep was a smaller share of the step whenever the host slowed: -12% to -19%.)
SLOWER = 0.30
SHORT, LONG = 256, 1800
MID_SHORT, MID_LONG = 512, 1024  # the field reports' question at two more context pairs

TYPED, TYPED_OWN, EXPLAIN, DEFAULT, AB, ABAB = PATHS
BASELINE_PATHS = (DEFAULT, AB, ABAB)
ASKED = (TYPED, TYPED_OWN, EXPLAIN)  # the paths that read a stored sweep
GROSS = (*ASKED, DEFAULT)  # a large flag effect: the typed, stored and default paths
FLAGGED = (*GROSS, AB)  # the subtler ones across a restart too
BRACKETED = (*FLAGGED, ABAB)
Changes = Callable[[str, dict[str, FlagValue]], dict[str, str | None]]


@dataclass(frozen=True, order=True)
class Point:
    text_type: str
    context: int

    def __str__(self) -> str:
        return f"{self.text_type}@{self.context}"


def _flag_of(engine: str, what: str, flag: str | None) -> str:
    """The engine's flag for a scenario, or one sentence on why the scenario cannot run."""
    if flag is None:
        raise MeasureError(
            f"This scenario needs {what}, which the {engine} engine has no flag for; "
            "leave it out with --scenarios."
        )
    return flag


def _smaller_tree(engine: str, flags: dict[str, FlagValue]) -> dict:
    flag = _flag_of(engine, "a DDTree budget", get_adapter(engine).tree_budget_flag)
    return {flag: str(TREE_BUDGET)}


def _moderate_tree(engine: str, flags: dict[str, FlagValue]) -> dict:
    flag = _flag_of(engine, "a DDTree budget", get_adapter(engine).tree_budget_flag)
    return {flag: str(TREE_MODERATE)}


def _parsers(engine: str, flags: dict[str, FlagValue]) -> dict:
    parsers = get_adapter(engine).parser_flags
    _flag_of(engine, "output parsers", next(iter(parsers), None))
    return dict(parsers)


def _round_delay(engine: str, flags: dict[str, FlagValue]) -> dict:
    flag = _flag_of(engine, "a round slowdown", get_adapter(engine).round_slowdown_flag)
    return {flag: f"{SLOWER:g}"}


def _off(engine: str, flags: dict[str, FlagValue]) -> dict:
    return speculation_off(engine, flags)


@dataclass(frozen=True)
class Scenario:
    name: str
    truth: Outcome
    what: str
    before: Point
    after: Point
    changes: Changes | None = None  # the flag changes the "after" side runs with
    paths: tuple[str, ...] = ASKED
    # the tok/s effect by construction, where one is known: 0 for a change that cannot
    # move decode speed, a bound for the round slowdown (x1.3 at least)
    constructed: float | None = None


_ALL = (
    Scenario("null", "physics", "the same engine, context and text measured twice",
             Point("code", SHORT), Point("code", SHORT), constructed=0.0),
    Scenario("null-long", "physics", f"the same again on prose at context {LONG}, where "
             "passages of a text differ most", Point("prose", LONG), Point("prose", LONG),
             constructed=0.0),
    Scenario("context", "physics", f"code at context {SHORT} -> {LONG}",
             Point("code", SHORT), Point("code", LONG)),
    Scenario("text", "physics", f"code -> prose at context {SHORT}",
             Point("code", SHORT), Point("prose", SHORT)),
    Scenario("field-report", "physics",
             f"code at context {SHORT} -> prose at {LONG} (the field reports' question)",
             Point("code", SHORT), Point("prose", LONG)),
    Scenario("field-report-1024", "physics", f"code at context {SHORT} -> prose at {MID_LONG}",
             Point("code", SHORT), Point("prose", MID_LONG)),
    Scenario("field-report-512", "physics", f"code at context {MID_SHORT} -> prose at {LONG}",
             Point("code", MID_SHORT), Point("prose", LONG)),
    Scenario("spec-off", "not physics", "speculation switched off by a flag",
             Point("code", SHORT), Point("code", SHORT), _off, GROSS),
    Scenario("tree-budget", "not physics",
             f"a DDTree budget of {TREE_BUDGET} (a regression at the same text and context)",
             Point("code", SHORT), Point("code", SHORT), _smaller_tree, GROSS),
    Scenario("parsers", "physics", "tool-call and reasoning parsers on, across a restart",
             Point("code", SHORT), Point("code", SHORT), _parsers, BRACKETED,
             constructed=0.0),
    Scenario("round-delay", "not physics",
             f"every verify round {SLOWER:.0%} longer than its own compute "
             "(--debug-round-slowdown)",
             Point("code", SHORT), Point("code", SHORT), _round_delay,
             BRACKETED, constructed=1 / (1 + SLOWER) - 1),
    Scenario("tree-moderate", "not physics", f"a DDTree budget of {TREE_MODERATE}",
             Point("code", SHORT), Point("code", SHORT), _moderate_tree, FLAGGED),
)  # fmt: skip
SCENARIOS: dict[str, Scenario] = {s.name: s for s in _ALL}
PATH_NAMES = BRACKETED
