"""What `bench verdict` reports: accuracy per scenario and per path, the false-alarm
rate with its 95% upper bound, the time each part took; as a table or as JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from console.analysis.verdict_scoring import (
    ScenarioScore,
    Trial,
    false_alarms,
    not_enough_on_big,
    path_scores,
    upper_bound,
)
from console.analysis.verdict_scoring import scores as _scores
from console.config import FlagValue
from console.experiments.verdict_scenarios import SCENARIOS


def scores(trials: Sequence[Trial]) -> list[ScenarioScore]:
    return _scores(trials, SCENARIOS)


@dataclass
class BenchResult:
    trials: list[Trial]
    params: dict[str, Any]
    flags_before: dict[str, FlagValue]
    flags_after: dict[str, FlagValue] | None = None
    seconds: float = 0.0
    status: str = "complete"
    timings: dict[str, float] = field(default_factory=dict)  # seconds per part, summed

    @property
    def restored(self) -> bool:
        return self.flags_after == self.flags_before

    def table(self) -> list[str]:
        head = (f"{'scenario':<14} {'truth':<12} {'true effect (median, range)':<28} "
                f"{'physics':>7} {'not phys.':>9} {'not enough':>10} {'accuracy':>13}")  # fmt: skip
        lines = [head, "-" * len(head)]
        for s in scores(self.trials):
            c = s.counts
            acc = f"{s.n_right}/{len(s.trials)} {s.accuracy:.0%}" if s.trials else "-"
            lines.append(
                f"{s.scenario.name:<14} {s.scenario.truth:<12} {s.effect_text():<28} "
                f"{c['physics']:>7} {c['not physics']:>9} {c['not enough evidence']:>10} "
                f"{acc:>13}"
            )
        for path, p in path_scores(self.trials).items():
            acc = f"{p['right']}/{p['trials']} {p['accuracy']:.0%}" if p["trials"] else "-"
            lines.append(f"  path {path:<18} {acc:>13} right; false alarms "
                         f"{p['false_alarms']}/{p['physics_trials']}")  # fmt: skip
        alarms, physics = false_alarms(self.trials)
        bound = upper_bound(alarms, physics)
        null = [t for t in self.trials if t.scenario == "null"]
        lines.append(
            f"false alarms ('not physics' where the truth is physics): {alarms}/{physics}"
            + (f" (95% upper bound {bound:.1%})" if bound is not None else "")
            + (f"; on null: {sum(t.false_alarm for t in null)}/{len(null)}" if null else "")
        )
        big, of = not_enough_on_big(self.trials)
        if of:
            lines.append(f"'not enough evidence' where the true effect exceeds 25%: {big}/{of}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        alarms, physics = false_alarms(self.trials)
        null = [t for t in self.trials if t.scenario == "null"]
        big, of = not_enough_on_big(self.trials)
        return {
            "status": self.status,
            "params": self.params,
            "seconds": self.seconds,
            "timings": self.timings,
            "scenarios": [s.as_dict() for s in scores(self.trials)],
            "paths": path_scores(self.trials),
            "false_alarms": {
                "count": alarms,
                "of": physics,
                "rate": alarms / physics if physics else None,
                "upper_95": upper_bound(alarms, physics),
                "null": sum(t.false_alarm for t in null),
            },
            "not_enough_on_big": {"count": big, "of": of},
            "flags_before": self.flags_before,
            "flags_after": self.flags_after,
            "restored": self.restored,
            "trials": [t.as_dict() for t in self.trials],
        }
