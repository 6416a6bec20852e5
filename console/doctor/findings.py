"""What the checks of one doctor run learn and share: the service's status, its flag
schema and one `/metrics` page, each read once."""

from __future__ import annotations

from dataclasses import dataclass

from console.backends import Backend, DiscoveredSchema
from console.backends.wire import MetricsScrape
from console.config import FlagValue
from console.service import EngineService, ServiceStatus

RUNNING = ("ready", "starting", "loading")


@dataclass
class Findings:
    service: EngineService
    status: ServiceStatus | None = None  # None: it could not be read
    schema: DiscoveredSchema | None = None
    scrape: MetricsScrape | None = None  # the engine's /metrics, when it served one

    @property
    def host(self) -> str:
        return self.service.profile.name

    @property
    def backend(self) -> Backend:
        return self.service.backend

    @property
    def flags(self) -> dict[str, FlagValue]:
        """The flags the engine runs with (launch.json), else those a start would use."""
        launch = self.status.launch if self.status is not None else None
        if launch is not None:
            return launch.flags
        return self.backend.initial_flags(self.service.profile)

    @property
    def ready(self) -> bool:
        return self.status is not None and self.status.state == "ready"

    @property
    def our_pid(self) -> int | None:
        st = self.status
        return st.pid if st is not None and st.state in RUNNING else None
