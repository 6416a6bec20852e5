"""What a rollback would do: the current flags, the last-good ones and the diff between.

The CLI prints this before it rolls back and the TUI asks for confirmation with it, so
both show the same diff and say the same sentence when there is nothing to roll back to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from console.service.flags import unified_diff
from console.service.launch import LaunchConfig, LaunchStore

NO_CHANGE = "(the last-good flags equal the current ones; restarting with them)"


def no_last_good(host: str) -> str:
    return (
        f"There is no last-good config for {host} yet (it is kept when flags are applied), "
        "so there is nothing to roll back to."
    )


@dataclass(frozen=True)
class RollbackPlan:
    host: str
    current: LaunchConfig | None
    last_good: LaunchConfig | None
    diff: str  # unified diff from the current flags to the last-good ones; "" when equal

    @property
    def possible(self) -> bool:
        """There is a last-good config to roll back to."""
        return self.last_good is not None

    @property
    def changed(self) -> bool:
        """Rolling back changes the flags (it still restarts when they are equal)."""
        return bool(self.diff)

    @property
    def text(self) -> str:
        """What the user reads before confirming: the diff, or one sentence saying why
        there is none."""
        if not self.possible:
            return no_last_good(self.host)
        return self.diff or NO_CHANGE


class _ServiceLike(Protocol):
    async def store(self) -> LaunchStore: ...


async def plan_rollback(service: _ServiceLike, host: str) -> RollbackPlan:
    """Read both configs from the host's launch store and diff them; writes nothing."""
    store = await service.store()
    current, last_good = await store.current(), await store.last_good()
    diff = ""
    if last_good is not None:
        old = current.flags if current is not None else {}
        diff = unified_diff(old, last_good.flags, f"{host}:launch.json")
    return RollbackPlan(host=host, current=current, last_good=last_good, diff=diff)
