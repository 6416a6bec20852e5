"""The launch config of a service and where its files live on the host.

Per service, on the host: `<state_dir>/<service>/`
  launch.json     the config the service runs with now (flags and the argv they make)
  last-good.json  the config before the last change, unless that one was known bad
  state.json      bookkeeping: the id of the last config that failed to come up
  pid, exitcode, engine.log, engine.log.1   (process supervisor)
The profile's flags only seed launch.json; after that `set` edits launch.json and
`rollback` restores last-good.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from console.config import DEFAULT_STATE_DIR, FlagValue, HostProfile
from console.errors import ServiceError
from console.transport.base import Transport, expand_path


@dataclass(frozen=True)
class LaunchConfig:
    engine: str
    flags: dict[str, FlagValue]
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    workdir: str | None = None
    written_at: str = ""

    @property
    def id(self) -> str:
        """Identifies what runs (argv, env, workdir), not when it was written."""
        body = json.dumps([self.argv, self.env, self.workdir], sort_keys=True)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    @property
    def port(self) -> int | None:
        port = self.flags.get("port")
        try:
            return int(port) if port is not None else None  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> LaunchConfig:
        try:
            data = json.loads(text)
            return cls(
                engine=str(data["engine"]),
                flags=dict(data["flags"]),
                argv=[str(a) for a in data["argv"]],
                env={str(k): str(v) for k, v in data.get("env", {}).items()},
                workdir=data.get("workdir"),
                written_at=str(data.get("written_at", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ServiceError(f"{source} is not a valid launch config ({exc}).") from None

    def stamped(self) -> LaunchConfig:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        return LaunchConfig(self.engine, self.flags, self.argv, self.env, self.workdir, now)


async def state_base(transport: Transport, profile: HostProfile) -> str:
    """The directory a profile's service state lives under: its `state_dir`, `~`
    expanded on the host; for the default on this machine, `$XDG_STATE_HOME/specconsole`
    when XDG_STATE_HOME is set (an absolute path, as the XDG spec requires)."""
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if profile.ssh is None and profile.state_dir == DEFAULT_STATE_DIR and xdg.startswith("/"):
        return posixpath.join(xdg, "specconsole")
    return await expand_path(transport, profile.state_dir)


class ServiceFiles:
    """Paths of one service's state on its host (`~` expanded against the host)."""

    def __init__(self, directory: str) -> None:
        self.dir = directory

    @classmethod
    async def for_profile(cls, transport: Transport, profile: HostProfile) -> ServiceFiles:
        return cls(posixpath.join(await state_base(transport, profile), profile.service_name))

    def path(self, name: str) -> str:
        return posixpath.join(self.dir, name)

    @property
    def launch(self) -> str:
        return self.path("launch.json")

    @property
    def last_good(self) -> str:
        return self.path("last-good.json")

    @property
    def state(self) -> str:
        return self.path("state.json")

    @property
    def pid(self) -> str:
        return self.path("pid")

    @property
    def exitcode(self) -> str:
        return self.path("exitcode")

    @property
    def log(self) -> str:
        return self.path("engine.log")


class LaunchStore:
    """Reads and atomically writes the launch configs of one service."""

    def __init__(self, transport: Transport, files: ServiceFiles) -> None:
        self.transport = transport
        self.files = files

    async def _read(self, path: str) -> LaunchConfig | None:
        try:
            text = (await self.transport.read_file(path)).decode()
        except FileNotFoundError:
            return None
        return LaunchConfig.from_json(text, f"{path} on {self.transport.name}")

    async def current(self) -> LaunchConfig | None:
        return await self._read(self.files.launch)

    async def last_good(self) -> LaunchConfig | None:
        return await self._read(self.files.last_good)

    async def write_current(self, config: LaunchConfig) -> None:
        await self.transport.write_file(self.files.launch, config.stamped().to_json().encode())

    async def write_last_good(self, config: LaunchConfig) -> None:
        await self.transport.write_file(self.files.last_good, config.to_json().encode())

    async def _state(self) -> dict[str, object]:
        try:
            return json.loads(await self.transport.read_file(self.files.state))
        except (FileNotFoundError, ValueError):
            return {}

    async def mark_failed(self, config: LaunchConfig) -> None:
        state = await self._state()
        state["last_failed_id"] = config.id
        await self.transport.write_file(self.files.state, json.dumps(state).encode())

    async def known_bad(self, config: LaunchConfig) -> bool:
        return (await self._state()).get("last_failed_id") == config.id

    async def clear_failed(self) -> None:
        state = await self._state()
        if state.pop("last_failed_id", None) is not None:
            await self.transport.write_file(self.files.state, json.dumps(state).encode())
