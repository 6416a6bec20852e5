"""The engine service on a host: supervisors, lifecycle, flag apply / diff / rollback."""

from __future__ import annotations

from console.service.lifecycle import Lifecycle, LifecycleEvent
from console.service.service import ApplyResult, EngineService, FlagPlan, ServiceStatus

__all__ = [
    "ApplyResult",
    "EngineService",
    "FlagPlan",
    "Lifecycle",
    "LifecycleEvent",
    "ServiceStatus",
]
