"""The engine service on a host: supervisors, lifecycle, flag apply / diff / rollback."""

from __future__ import annotations

from console.service.engine_service import (
    ApplyResult,
    EngineService,
    FlagPlan,
    OpenService,
    ServiceBusy,
    ServiceStatus,
)
from console.service.lifecycle import Lifecycle, LifecycleEvent

__all__ = [
    "ApplyResult",
    "EngineService",
    "FlagPlan",
    "Lifecycle",
    "LifecycleEvent",
    "OpenService",
    "ServiceBusy",
    "ServiceStatus",
]
