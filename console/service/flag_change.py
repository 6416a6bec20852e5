"""A flag change, from what the user typed to a checked launch config and its diff.

`plan_change` validates against the engine's schema (and, where the engine's parser can
be asked on the host, against the engine itself) and writes nothing; `EngineService.apply`
then writes and restarts. Kept apart from the service facade because it is one concept:
what a change means, not how the service runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from console.errors import FlagError
from console.service.flags import (
    FlagValueError,
    ModelLimits,
    apply_changes,
    canonical_flags,
    engine_parsed_ints,
    unified_diff,
)
from console.service.launch import LaunchConfig
from console.service.lifecycle import LifecycleEvent

if TYPE_CHECKING:
    from console.backends import DiscoveredSchema
    from console.service.engine_service import EngineService


@dataclass(frozen=True)
class FlagPlan:
    """A validated change, ready to apply: the diff is what the user confirms."""

    old: LaunchConfig | None
    new: LaunchConfig
    diff: str
    notices: tuple[str, ...] = ()  # renamed spellings, one line each
    checked_by: str = ""  # the engine parser that accepted the new command line, if any

    @property
    def changed(self) -> bool:
        return bool(self.diff)

    def as_dict(self) -> dict[str, object]:
        """What `set --dry-run --json` prints: the planned command line beside the old."""
        return {
            "changed": self.changed,
            "diff": self.diff,
            "notices": list(self.notices),
            "checked_by": self.checked_by,
            "old_flags": self.old.flags if self.old else None,
            "old_argv": self.old.argv if self.old else None,
            "flags": self.new.flags,
            "argv": self.new.argv,
        }


@dataclass
class ApplyResult:
    event: LifecycleEvent
    config: LaunchConfig
    events: list[LifecycleEvent] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.event.state == "ready"


def _effective(discovered: DiscoveredSchema, merged: dict, role: str, fallback: str) -> str | None:
    name = discovered.roles.get(role, fallback)
    if merged.get(name) is not None:
        return str(merged[name])
    # Unset: the engine uses its own default, which its --help prints (our engine's
    # bundled weights, say); the limits must come from those files too.
    spec = discovered.schema.resolve(name)
    default = spec.default if spec is not None else None
    return default if default not in (None, "", "None") else None


async def plan_change(service: EngineService, changes: dict[str, str | None]) -> FlagPlan:
    """Validate a change on `service`'s host and diff it; writes nothing. Raises `FlagError`."""
    discovered = await service.schema()
    profile, backend, transport = service.profile, service.backend, service.transport
    where = f"{profile.engine} on {profile.name}"
    old = await (await service.store()).current()
    base = old or service.config_for(backend.initial_flags(profile))
    merged = {**base.flags, **{k: v for k, v in changes.items() if v is not None}}
    limits = await ModelLimits.read(
        transport,
        _effective(discovered, merged, "model_path", "model-path"),
        _effective(discovered, merged, "draft_model_path", "speculative-draft-model-path"),
    )
    engine = discovered.schema.engine_version or profile.engine
    try:
        flags = apply_changes(
            discovered.schema, discovered.roles, base.flags, changes, limits, where
        )
    except FlagValueError as exc:
        # The engine's own word on the value, when its parser can be asked.
        check = await backend.check_flags(transport, profile, discovered, {exc.spec.name: exc.raw})
        if check is None or check.ok:
            raise
        raise FlagError(f"{str(exc).rstrip('.')} ({engine}: {check.error}).") from None
    # Then the whole new command line through the engine's real parse_args, a dry run
    # on the host: nothing restarts unless the engine itself accepts it.
    notices = discovered.schema.canonical(merged)[1]
    check = await backend.check_flags(transport, profile, discovered, flags)
    if check is not None and not check.ok:
        raise FlagError(f"{engine} refuses this command line: {check.error}; nothing was changed.")
    if check is not None and check.values:
        flags = engine_parsed_ints(discovered.schema, flags, check.values)
    label = f"{profile.name}:{(await service.files()).launch}"
    old_flags = canonical_flags(discovered.schema, base.flags) if old else {}
    return FlagPlan(
        old=old,
        new=service.config_for(flags),
        diff=unified_diff(old_flags, flags, label),
        notices=tuple(notices),
        checked_by=discovered.schema.source if check is not None else "",
    )
