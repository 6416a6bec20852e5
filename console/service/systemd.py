"""The `systemd` supervisor: a unit (or a drop-in) whose ExecStart carries the flags.

start renders the unit from the launch config, installs it, daemon-reloads and starts;
state comes from `systemctl show`, logs from `journalctl -u`. With `sudo = true` every
privileged step runs through `sudo -n` (never prompting: a console cannot answer a
password prompt over a non-interactive channel).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import AsyncIterator

from console.config import SupervisorProfile
from console.errors import ServiceError
from console.service.launch import LaunchConfig, ServiceFiles
from console.service.supervisor import SupervisorState
from console.service.unit import render_dropin, render_unit
from console.settings import DEFAULT_SETTINGS, ConsoleSettings
from console.transport.base import Transport, check, expand_path


def parse_show(text: str) -> dict[str, str]:
    """`systemctl show -p A,B unit` output: `Key=Value` per line."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def state_from_show(props: dict[str, str]) -> SupervisorState:
    active = props.get("ActiveState", "")
    pid = int(props["MainPID"]) if props.get("MainPID", "0").isdigit() else None
    pid = pid or None
    if active in ("active", "activating", "deactivating", "reloading"):
        return SupervisorState("running", pid=pid, detail=f"{active} ({props.get('SubState', '')})")
    if active == "failed":
        status = props.get("ExecMainStatus", "")
        code = int(status) if status.lstrip("-").isdigit() else None
        if props.get("ExecMainCode") == "2":  # CLD_KILLED: status is a signal number
            code = 128 + code if code is not None else None
        return SupervisorState(
            "exited", exit_code=code, detail=f"result {props.get('Result', '?')}"
        )
    return SupervisorState("stopped", detail=active or "unknown")


class SystemdSupervisor:
    def __init__(
        self,
        transport: Transport,
        files: ServiceFiles,
        settings: SupervisorProfile,
        unit: str,
        service: str,
        stop_timeout: float = 30.0,
        *,
        timings: ConsoleSettings | None = None,
    ) -> None:
        self.transport = transport
        self.files = files
        self.settings = settings
        self.unit = unit
        self.service = service
        self.stop_timeout = stop_timeout
        self._since: str | None = None
        self.timings = timings or DEFAULT_SETTINGS

    def _prefix(self) -> list[str]:
        return ["sudo", "-n"] if self.settings.sudo else []

    def _systemctl(self, *args: str) -> list[str]:
        scope = ["--user"] if self.settings.scope == "user" else []
        return [*self._prefix(), "systemctl", *scope, *args]

    def _journalctl(self, *args: str) -> list[str]:
        scope = ["--user-unit", self.unit] if self.settings.scope == "user" else ["-u", self.unit]
        return [*self._prefix(), "journalctl", *scope, "-o", "cat", "--no-pager", *args]

    async def unit_path(self) -> str:
        base = (
            await expand_path(self.transport, "~/.config/systemd/user")
            if self.settings.scope == "user"
            else "/etc/systemd/system"
        )
        if self.settings.mode == "dropin":
            return posixpath.join(base, f"{self.unit}.d", "specconsole.conf")
        return posixpath.join(base, self.unit)

    def render(self, config: LaunchConfig) -> str:
        if self.settings.mode == "dropin":
            return render_dropin(config, self.service, stop_timeout=self.stop_timeout)
        return render_unit(
            config,
            self.service,
            user_scope=self.settings.scope == "user",
            stop_timeout=self.stop_timeout,
        )

    async def install(self, config: LaunchConfig) -> str:
        """Write the unit text and daemon-reload; returns the unit file path."""
        path = await self.unit_path()
        text = self.render(config).encode()
        if self.settings.sudo:
            # Stage in our own state dir, then move into place as root in one rename.
            staged = self.files.path(posixpath.basename(path))
            await self.transport.write_file(staged, text)
            tmp = path + ".specconsole.tmp"
            script = (
                f"mkdir -p {shlex.quote(posixpath.dirname(path))} && "
                f"cp {shlex.quote(staged)} {shlex.quote(tmp)} && "
                f"chmod 644 {shlex.quote(tmp)} && mv -f {shlex.quote(tmp)} {shlex.quote(path)}"
            )
            await check(self.transport, ["sudo", "-n", "sh", "-c", script], "Installing the unit")
        else:
            await self.transport.write_file(path, text)
        await check(self.transport, self._systemctl("daemon-reload"), "systemctl daemon-reload")
        return path

    async def start(self, config: LaunchConfig) -> None:
        await self.install(config)
        now = await self.transport.run(["date", "+%s"], timeout=self.timings.command_timeout_s)
        self._since = f"@{now.stdout.strip()}" if now.ok and now.stdout.strip().isdigit() else None
        # Forget an earlier failure so `failed` afterwards means this start failed.
        await self.transport.run(
            self._systemctl("reset-failed", self.unit), timeout=self.timings.command_timeout_s
        )
        result = await self.transport.run(self._systemctl("start", self.unit), timeout=120)
        if not result.ok:
            raise ServiceError(
                f"systemctl start {self.unit} failed on {self.transport.name}: "
                f"{result.last_line()}."
            )

    async def stop(self, timeout: float | None = None) -> None:
        timeout = self.timings.stop_timeout_s if timeout is None else timeout
        result = await self.transport.run(self._systemctl("stop", self.unit), timeout=timeout + 60)
        # Exit 5: the unit is not loaded, i.e. there is nothing to stop.
        if not result.ok and result.exit_code != 5:
            raise ServiceError(
                f"systemctl stop {self.unit} failed on {self.transport.name}: {result.last_line()}."
            )

    async def state(self) -> SupervisorState:
        result = await check(
            self.transport,
            self._systemctl(
                "show", "-p", "ActiveState,SubState,MainPID,ExecMainStatus,ExecMainCode,Result",
                self.unit,
            ),
            "systemctl show",
            timeout=self.timings.command_timeout_s,
        )  # fmt: skip
        return state_from_show(parse_show(result.stdout))

    async def follow_logs(self, backlog: int | None = 0) -> AsyncIterator[str]:
        if backlog is None and self._since:
            args = ["--since", self._since, "-f"]
        else:
            args = ["-n", str(backlog or 0), "-f"]
        async for line in self.transport.stream(self._journalctl(*args)):
            yield line

    async def log_tail(self, lines: int = 50) -> list[str]:
        result = await self.transport.run(
            self._journalctl("-n", str(int(lines))), timeout=self.timings.command_timeout_s
        )
        if not result.ok:
            raise ServiceError(
                f"journalctl for {self.unit} failed on {self.transport.name}: {result.last_line()}."
            )
        return result.stdout.splitlines()
