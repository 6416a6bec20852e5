"""One writer at a time: a session's action slot, and for a change the host's lease.

A session runs one action at a time (a restart, an apply, a sweep): a second is refused
with "busy: <what is running>" rather than interleaving restarts. A change (set, start,
stop, restart, rollback) also holds the writer's lease on the host (`lease`), from its
config write through the restart to ready, so another session or a script changing the
same service waits or is refused by name. `EngineService` is the one user; the slot
needs its `profile`, `transport`, `settings` and `files()`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from console.errors import ServiceError
from console.service.lease import HeldLease, Holder, Lease, Note

if TYPE_CHECKING:
    from console.config import HostProfile
    from console.service.launch import ServiceFiles
    from console.settings import ConsoleSettings
    from console.transport import Transport


class ServiceBusy(ServiceError):
    """A second action that would restart or measure while another one runs."""


class WriterSlot:
    """The action slot and the writer's lease, mixed into `EngineService`."""

    profile: HostProfile
    transport: Transport
    settings: ConsoleSettings
    lease_wait: float
    on_note: Note | None
    _action: str | None
    _held: HeldLease | None

    async def files(self) -> ServiceFiles:
        raise NotImplementedError

    def _init_slot(self) -> None:
        self._action = None
        self._held = None
        # How long a change waits for another writer's lease (0: refused at once), and
        # where "waiting for the lease held by ..." goes (the CLI: stderr).
        self.lease_wait = self.settings.lease_wait_s
        self.on_note = None

    def _lease(self, files: ServiceFiles) -> Lease:
        return Lease(self.transport, files, timeout=self.settings.command_timeout_s)

    async def lease_holder(self) -> Holder | None:
        """Who holds the writer's lease on the host now (a read: it takes none)."""
        return await self._lease(await self.files()).current_holder()

    @property
    def busy(self) -> str | None:
        """What action is running now, or None."""
        return self._action

    @contextlib.asynccontextmanager
    async def action(self, what: str) -> AsyncIterator[None]:
        """Hold the one action slot for `what`; raises `ServiceBusy` if it is taken."""
        if self._action is not None:
            raise ServiceBusy(
                f"busy: {self._action} is running on {self.profile.name}; wait for it or "
                "cancel it first."
            )
        self._action = what
        try:
            yield
        finally:
            self._action = None

    @contextlib.asynccontextmanager
    async def writing(self, what: str) -> AsyncIterator[None]:
        """The action slot here and the writer's lease on the host, for a change: from
        its config write through the restart to ready, no other writer touches the
        service (see `lease`)."""
        async with self.action(what):
            lease = Lease(
                self.transport, await self.files(), timeout=self.settings.command_timeout_s
            )
            holder = Holder.here(what)
            async with lease.hold(holder, wait=self.lease_wait, on_note=self._note) as held:
                self._held = held
                try:
                    yield
                finally:
                    self._held = None

    def _note(self, text: str) -> None:
        if self.on_note is not None:
            self.on_note(text)

    def _still_held(self) -> None:
        """Before each write: a lease lost with the link must not go on changing things."""
        if self._held is not None:
            self._held.check()
