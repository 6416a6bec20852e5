"""Scoring the verdict benchmark: right or wrong per trial, accuracy per scenario and per
operator path, and the false-alarm rate with its 95% upper bound.

A trial is one answer an operator would have got on one path (`typed` diagnose on the
sweep's passages or on the operator's own, `history explain`, `set --baseline` in either
order) about a change whose true cause is known by
construction. The outcome is right when it is the true one. "Not enough evidence" is
also right when the true effect is within `SMALL` (15%): a change that small is inside
what a bug hunt cares about, so declining to call it is not a miss. The true effect is
the trial's pooled after / before tok/s, except where the scenario cannot move decode
speed by construction (null, parsers: `constructed` 0): a gap measured there is the
host's drift between the two sides, not an effect, so it is 0. A false alarm is "not
physics" where the truth is physics; its rate is given with the one-sided 95%
Clopper-Pearson upper bound (0 of 30 still allows up to 9.5%, the "rule of three").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.thresholds import WIDE
from console.analysis.verdict_records import OUTCOMES, Judgement, Outcome

# a true effect within `WIDE` (15%): "not enough evidence" is not counted wrong
SMALL = WIDE
# see verdict_paths
PATHS = ("typed", "typed-own", "explain", "baseline", "baseline-ab", "baseline-abab")


def right(truth: Outcome, outcome: str, effect: float | None) -> bool:
    """The outcome is the true one, or "not enough evidence" on a true effect within
    `SMALL` (unknown effect: counted wrong)."""
    if outcome == truth:
        return True
    return outcome == "not enough evidence" and effect is not None and abs(effect) <= SMALL


def _binom_cdf(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def upper_bound(k: int, n: int, level: float = 0.95) -> float | None:
    """The one-sided Clopper-Pearson upper bound on a rate seen `k` times in `n`: the p
    at which seeing `k` or fewer has probability 1 - `level`. None without trials."""
    if n == 0:
        return None
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if _binom_cdf(k, n, mid) > 1 - level:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class Trial:
    """One answer on one path: the verdict and the true effect it was scored against."""

    scenario: str
    run: int
    truth: Outcome
    outcome: str
    effect: float | None  # after / before pooled tok/s, minus 1
    headline: str
    judgement: dict[str, Any] = field(default_factory=dict)
    path: str = "explain"
    seconds: float = 0.0  # what this path cost on top of what it shares with the others
    constructed: float | None = None  # the effect by construction, where one is known

    @property
    def right(self) -> bool:
        return right(self.truth, self.outcome, self.true_effect)

    @property
    def true_effect(self) -> float | None:
        """What the trial is scored against: 0 where the scenario cannot move decode speed
        by construction (the measured gap is the host's drift), else the measured effect
        (a construction that is only a bound, as the round slowdown's x1.3 at least, does
        not replace the measurement)."""
        return 0.0 if self.constructed == 0.0 else self.effect

    @property
    def false_alarm(self) -> bool:
        return self.truth == "physics" and self.outcome == "not physics"

    def as_dict(self) -> dict[str, Any]:
        j = self.judgement
        return {
            "scenario": self.scenario, "run": self.run, "path": self.path, "truth": self.truth,
            "outcome": self.outcome, "right": self.right, "false_alarm": self.false_alarm,
            "true_effect": self.effect, "constructed_effect": self.constructed,
            "headline": self.headline, "seconds": self.seconds,
            "residual": next((f["ratio"] for f in j.get("factors", ())
                              if f["name"] == "residual"), None),
            "commit_residual": (j.get("commit_residual") or {}).get("ratio"),
            "paired": j.get("paired"),
            "before": j.get("baseline"), "after": j.get("observed"),
            "baseline_check": (j.get("baseline_check") or {}).get("ratio"),
            # a `set --baseline` trial's table: its rows, the order it used, its notes
            **{k: j[k] for k in ("rows", "order", "notes") if k in j},
        }  # fmt: skip


def trial_of(
    scenario: Any, run: int, effect: float | None, j: Judgement, path: str = "explain"
) -> Trial:
    """A trial from a verdict; `scenario` is anything with `name` and `truth`."""
    return Trial(scenario.name, run, scenario.truth, j.outcome, effect, j.headline,
                 j.as_dict(), path)  # fmt: skip


@dataclass(frozen=True)
class ScenarioScore:
    """A scenario's (or a path's) trials: outcomes, accuracy, the true effects."""

    scenario: Any  # has `name`, `truth`, `what`
    trials: tuple[Trial, ...]

    @property
    def counts(self) -> dict[str, int]:
        return {o: sum(t.outcome == o for t in self.trials) for o in OUTCOMES}

    @property
    def n_right(self) -> int:
        return sum(t.right for t in self.trials)

    @property
    def accuracy(self) -> float | None:
        return self.n_right / len(self.trials) if self.trials else None

    @property
    def effects(self) -> list[float]:
        return [t.effect for t in self.trials if t.effect is not None]

    def effect_text(self) -> str:
        e = self.effects
        if not e:
            return "-"
        return f"{statistics.median(e):+.0%} ({min(e):+.0%}..{max(e):+.0%})"

    def as_dict(self) -> dict[str, Any]:
        e = self.effects
        paths = sorted({t.path for t in self.trials}, key=_path_order)
        return {
            "scenario": self.scenario.name, "truth": self.scenario.truth,
            "what": self.scenario.what, "runs": len({t.run for t in self.trials}),
            "trials": len(self.trials), "outcomes": self.counts,
            "right": self.n_right, "accuracy": self.accuracy,
            "false_alarms": sum(t.false_alarm for t in self.trials),
            "true_effect": {"median": statistics.median(e), "min": min(e), "max": max(e)}
            if e else None,
            "by_path": {p: _path_dict([t for t in self.trials if t.path == p]) for p in paths},
        }  # fmt: skip


def _path_order(path: str) -> int:
    return PATHS.index(path) if path in PATHS else len(PATHS)


def _path_dict(trials: Sequence[Trial]) -> dict[str, Any]:
    n = len(trials)
    ok = sum(t.right for t in trials)
    return {"trials": n, "right": ok, "accuracy": ok / n if n else None,
            "outcomes": {o: sum(t.outcome == o for t in trials) for o in OUTCOMES}}  # fmt: skip


@dataclass(frozen=True)
class _Named:
    name: str
    truth: str
    what: str = ""


def scores(
    trials: Sequence[Trial], catalog: Mapping[str, Any] | None = None
) -> list[ScenarioScore]:
    """Per scenario, in the order the trials came; `catalog` names each scenario's `what`."""
    names = list(dict.fromkeys(t.scenario for t in trials))
    out = []
    for n in names:
        mine = tuple(t for t in trials if t.scenario == n)
        known = (catalog or {}).get(n) or _Named(n, mine[0].truth)
        out.append(ScenarioScore(known, mine))
    return out


def path_scores(trials: Sequence[Trial]) -> dict[str, dict[str, Any]]:
    """Per operator path, over every scenario: trials, right, accuracy, false alarms."""
    paths = sorted({t.path for t in trials}, key=_path_order)
    out = {}
    for p in paths:
        mine = [t for t in trials if t.path == p]
        alarms, physics = false_alarms(mine)
        out[p] = {**_path_dict(mine), "false_alarms": alarms, "physics_trials": physics}
    return out


def false_alarms(trials: Sequence[Trial]) -> tuple[int, int]:
    """("not physics" where the truth is physics, trials whose truth is physics)."""
    physics = [t for t in trials if t.truth == "physics"]
    return sum(t.false_alarm for t in physics), len(physics)


def not_enough_on_big(trials: Sequence[Trial], big: float = 0.25) -> tuple[int, int]:
    """("not enough evidence" on trials whose true effect exceeds `big`, those trials)."""
    large = [t for t in trials if t.true_effect is not None and abs(t.true_effect) > big]
    return sum(t.outcome == "not enough evidence" for t in large), len(large)
