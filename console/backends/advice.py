"""What `doctor` is told about a launch config by the engine's adapter: a problem with
its flags and the `set` that fixes it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class FlagAdvice:
    """One sentence on what these flags lack, and the flag values that supply it."""

    problem: str
    changes: dict[str, str] = field(default_factory=dict)

    def set_command(self, host: str) -> str:
        """`specconsole set gpu1 enable-metrics=true`, each assignment quoted."""
        assignments = [shlex.quote(f"{name}={value}") for name, value in self.changes.items()]
        return shlex.join(["specconsole", "set", host]) + " " + " ".join(assignments)
