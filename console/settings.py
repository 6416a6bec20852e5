"""Timeouts, retry backoff and poll intervals: one typed object, one place.

Every layer takes its timings from a `ConsoleSettings` (the CLI uses the defaults; the
TUI's `TuiSettings` extends this class, so `tui.toml` can change any of them). A number
that used to be written inline (`timeout=30`, a 0.5 s backoff doubling to 10 s, a 600 s
wait for ready) is a field here, named for what it bounds.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field


class Backoff(BaseModel):
    """Delays between retries: `start`, multiplied by `factor` each time, at most `max`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start_s: float = Field(default=0.5, gt=0)
    factor: float = Field(default=2.0, ge=1)
    max_s: float = Field(default=10.0, gt=0)

    def delays(self) -> Iterator[float]:
        """0.5, 1, 2, 4, 8, 10, 10, ... (with the defaults), forever."""
        delay = self.start_s
        while True:
            yield min(delay, self.max_s)
            delay = min(delay * self.factor, self.max_s)


class ConsoleSettings(BaseModel):
    """Every timing the console's core uses. Defaults suit a GPU host over SSH."""

    model_config = ConfigDict(extra="forbid")

    command_timeout_s: float = Field(default=30.0, gt=0)  # one short command on the host
    ready_timeout_s: float = Field(default=600.0, gt=0)  # start/apply/rollback: wait for ready
    stop_timeout_s: float = Field(default=20.0, gt=0)  # SIGTERM, then SIGKILL after this
    # A change waits this long for another writer's lease on the service (0: refused at
    # once): as long as that writer's restart may take, its stop and its ready wait.
    lease_wait_s: float = Field(default=900.0, ge=0)
    probe_timeout_s: float = Field(default=5.0, gt=0)  # one /health probe
    request_retry_s: float = Field(default=180.0, gt=0)  # a dropped link may take this to return
    request_timeout_s: float = Field(default=600.0, gt=0)  # one measured request, end to end
    backoff: Backoff = Field(default_factory=Backoff)  # every reconnect and retry loop


DEFAULT_SETTINGS = ConsoleSettings()
