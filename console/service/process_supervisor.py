"""The `process` supervisor: a detached process group with a pidfile and a log file.

Layout on the host is in `launch.ServiceFiles`. The engine runs under a small `sh`
wrapper started with `setsid`, so it has its own session (it survives the SSH session
and the console) and the wrapper's pid is also the process-group id. The wrapper:
- writes its pid, runs the engine as a child and waits for it;
- forwards SIGTERM to the engine and keeps waiting, so "wrapper alive" means "engine
  alive" and stop can wait for a clean shutdown;
- writes the engine's exit code to `exitcode`, so a crash is told apart from a stop.
The engine's environment carries `SPECCONSOLE_SERVICE_DIR` (see `port_owner`), so an
engine of ours found on the port without its pid file is still known for ours.
Liveness reads /proc (where present) because an unreaped zombie still answers `kill -0`.
Every path and argv element goes through `shlex.quote`.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator

from console.errors import ServiceError
from console.service.launch import LaunchConfig, ServiceFiles
from console.service.port_owner import MARKER
from console.service.supervisor import SupervisorState
from console.settings import DEFAULT_SETTINGS, ConsoleSettings
from console.transport.base import Transport, check

_WRAPPER = r"""
pidfile=$1; exitfile=$2; shift 2
echo $$ > "$pidfile"
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
wait "$child"; code=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
echo "$code" > "$exitfile"
"""

_ALIVE = r"""
alive() {
  if [ -r "/proc/$1/stat" ]; then
    s=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]
  elif [ -d /proc/self ]; then
    return 1
  else
    kill -0 "$1" 2>/dev/null
  fi
}
"""


class ProcessSupervisor:
    def __init__(
        self, transport: Transport, files: ServiceFiles, *, timings: ConsoleSettings | None = None
    ) -> None:
        self.transport = transport
        self.files = files
        self.timings = timings or DEFAULT_SETTINGS

    def _q(self, path: str) -> str:
        return shlex.quote(path)

    async def start(self, config: LaunchConfig) -> None:
        f = self.files
        argv = list(config.argv)
        if config.env:
            argv = ["env", *(f"{k}={v}" for k, v in config.env.items()), *argv]
        cd = f"cd {self._q(config.workdir)} || exit 4" if config.workdir else ":"
        script = f"""{_ALIVE}
d={self._q(f.dir)}
mkdir -p "$d" || exit 4
if [ -f {self._q(f.pid)} ] && alive "$(cat {self._q(f.pid)})"; then
  echo "already running (pid $(cat {self._q(f.pid)}))" >&2; exit 3
fi
rm -f {self._q(f.pid)} {self._q(f.exitcode)}
[ -f {self._q(f.log)} ] && mv -f {self._q(f.log)} {self._q(f.log + ".1")}
{cd}
export {MARKER}={self._q(f.dir)}
setsid sh -c {shlex.quote(_WRAPPER)} specconsole-wrapper {self._q(f.pid)} {self._q(f.exitcode)} \
  {shlex.join(argv)} > {self._q(f.log)} 2>&1 < /dev/null &
i=0
while [ ! -s {self._q(f.pid)} ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -s {self._q(f.pid)} ] || {{ echo "the service did not write its pid file" >&2; exit 5; }}
"""
        result = await self.transport.run(script, timeout=self.timings.command_timeout_s)
        if result.exit_code == 3:
            raise ServiceError(
                f"The service is already running on {self.transport.name} ({result.last_line()}); "
                "stop or restart it instead."
            )
        if not result.ok:
            raise ServiceError(
                f"Starting the service on {self.transport.name} failed: {result.last_line()}."
            )

    async def stop(self, timeout: float | None = None) -> None:
        timeout = self.timings.stop_timeout_s if timeout is None else timeout
        f = self.files
        ticks = max(1, int(timeout * 10))
        script = f"""{_ALIVE}
[ -f {self._q(f.pid)} ] || exit 0
pid=$(cat {self._q(f.pid)})
if [ -n "$pid" ] && alive "$pid"; then
  # TERM goes to the wrapper only, which forwards it once (a second TERM makes some
  # servers, uvicorn among them, skip their graceful shutdown); KILL takes the group.
  kill -s TERM "$pid" 2>/dev/null
  i=0
  while alive "$pid" && [ $i -lt {ticks} ]; do sleep 0.1; i=$((i+1)); done
  if alive "$pid"; then
    kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "$pid" 2>/dev/null
    echo "killed after {timeout:g} s" >&2
  fi
  # The engine is gone; what it started and did not reap (a tokenizer or scheduler
  # process) would keep its GPU memory or even its port: the group goes with it.
  kill -s KILL -- "-$pid" 2>/dev/null
fi
rm -f {self._q(f.pid)}
"""
        await check(self.transport, script, "Stopping the service", timeout=timeout + 30)

    async def state(self) -> SupervisorState:
        f = self.files
        script = f"""{_ALIVE}
if [ ! -f {self._q(f.pid)} ]; then echo stopped; exit 0; fi
pid=$(cat {self._q(f.pid)})
if [ -n "$pid" ] && alive "$pid"; then echo "running $pid"; exit 0; fi
if [ -f {self._q(f.exitcode)} ]; then echo "exited $pid $(cat {self._q(f.exitcode)})"
else echo "exited $pid unknown"; fi
"""
        result = await check(
            self.transport,
            script,
            "Reading the service state",
            timeout=self.timings.command_timeout_s,
        )
        words = result.stdout.split()
        if not words:
            raise ServiceError(
                f"Reading the service state on {self.transport.name} gave no answer."
            )
        if words[0] == "running":
            return SupervisorState("running", pid=int(words[1]))
        if words[0] == "exited":
            code = int(words[2]) if len(words) > 2 and words[2].lstrip("-").isdigit() else None
            pid = int(words[1]) if words[1].isdigit() else None
            return SupervisorState("exited", pid=pid, exit_code=code)
        return SupervisorState("stopped")

    async def follow_logs(self, backlog: int | None = 0) -> AsyncIterator[str]:
        # -F keeps following when start rotates engine.log to engine.log.1.
        start = "+1" if backlog is None else str(backlog)
        async for line in self.transport.stream(
            f"exec tail -n {start} -F {self._q(self.files.log)} 2>/dev/null"
        ):
            yield line

    async def log_tail(self, lines: int = 50) -> list[str]:
        result = await self.transport.run(
            f"tail -n {int(lines)} {self._q(self.files.log)} 2>/dev/null",
            timeout=self.timings.command_timeout_s,
        )
        return result.stdout.splitlines()
