"""What the running engine actually runs: its argv, read on the host, against its config.

launch.json says what the service *should* run; the engine process says what it *does*
run. They part when a change was written and its restart has not happened (yet, or ever:
a console killed between the two), or when the engine on the port is not the one the
config started. The argv comes from `/proc/PID/cmdline` of the process supervisor's
wrapper's child (the wrapper is `sh -c ... specconsole-wrapper PIDFILE EXITFILE ARGV`,
and `env K=V ARGV` execs into ARGV, so the child's cmdline is the config's argv exactly),
or of the recorded pid itself where no wrapper runs (systemd's main pid).
"""

from __future__ import annotations

from console.errors import ConsoleError
from console.transport.base import Transport

WRAPPER_NAME = "specconsole-wrapper"

_READ = r"""
pid=$1
[ -r "/proc/$pid/cmdline" ] || exit 3
if tr '\0' '\n' < "/proc/$pid/cmdline" | grep -qxF specconsole-wrapper; then
  # cat goes on past a process that ended meanwhile; field 1 is the pid, then the ppid
  # is the second field after the command name, which may hold spaces and parentheses.
  child=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$pid" '{ me = $1; sub(/^.*\) /, "");
    split($0, f, " "); if (f[2] == p) { print me; exit } }')
  [ -n "$child" ] || exit 3
  pid=$child
fi
cat "/proc/$pid/cmdline"
"""


async def running_argv(transport: Transport, pid: int, *, timeout: float) -> list[str] | None:
    """The engine's argv under the recorded `pid`; None where it cannot be read."""
    try:
        result = await transport.run(f"set -- {int(pid)}\n{_READ}", timeout=timeout)
    except ConsoleError:
        return None
    if not result.ok or not result.stdout:
        return None
    return result.stdout.rstrip("\0").split("\0")


def _options(argv: list[str]) -> dict[str, str | None]:
    """`--name value`, `--name=value` and `--switch` (None) of a command line."""
    out: dict[str, str | None] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if eq:
                out[name] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[name] = argv[i + 1]
                i += 1
            else:
                out[name] = None
        i += 1
    return out


def argv_drift(running: list[str], config: list[str]) -> str:
    """How the running argv differs from the config's, in words ("" when it does not)."""
    if running == config:
        return ""
    ran, want = _options(running), _options(config)
    parts = []
    for name in sorted(set(ran) | set(want)):
        if name not in want:
            parts.append(f"{name} {ran[name] or ''}".rstrip() + " (not in the config)")
        elif name not in ran:
            parts.append(f"no {name} (the config has {want[name] or 'it'})")
        elif ran[name] != want[name]:
            parts.append(f"{name} {ran[name]} (the config has {want[name]})")
    if not parts:
        return f"it runs `{' '.join(running)[:200]}`"
    return ", ".join(parts)
