"""Render systemd unit text whose ExecStart carries the engine's flags.

systemd parses ExecStart= itself (no shell): words split on whitespace, double quotes
group a word and allow C escapes, `%` starts a specifier and `$` an environment
substitution. So every argv element is double-quoted with `\\` and `"` escaped, control
characters written as C escapes, `%` doubled and `$` doubled. See systemd.service(5)
"Command lines" and systemd.unit(5) "Specifiers".
"""

from __future__ import annotations

from console.service.launch import LaunchConfig

_C_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote_word(word: str) -> str:
    """One ExecStart= argument, exactly as systemd will hand it to the process."""
    out = []
    for ch in word:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ch == "%":
            out.append("%%")
        elif ch == "$":
            out.append("$$")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def exec_start(argv: list[str]) -> str:
    if not argv:
        raise ValueError("empty argv")
    return " ".join(quote_word(a) for a in argv)


def _env_line(key: str, value: str) -> str:
    # Environment= takes quoted "K=V" words with C escapes and specifiers, but no `$`
    # substitution, so `$` stays as is.
    return "Environment=" + quote_word(f"{key}={value}").replace("$$", "$")


def _path_value(path: str) -> str:
    return path.replace("%", "%%")


def _service_lines(config: LaunchConfig, stop_timeout: float, reset_exec: bool) -> list[str]:
    lines = ["[Service]"]
    if reset_exec:
        lines.append("ExecStart=")  # a drop-in must clear the unit's ExecStart first
    lines.append("ExecStart=" + exec_start(config.argv))
    lines += [_env_line(k, v) for k, v in config.env.items()]
    if config.workdir:
        lines.append("WorkingDirectory=" + _path_value(config.workdir))
    return lines + [
        # A crash must surface as `failed` with its exit code, not vanish in a restart loop.
        "Restart=no",
        # SIGTERM to the engine, SIGKILL to whatever is left after the timeout.
        "KillMode=mixed",
        f"TimeoutStopSec={max(1, round(stop_timeout))}",
    ]


def render_unit(
    config: LaunchConfig, service: str, *, user_scope: bool = False, stop_timeout: float = 30
) -> str:
    lines = [
        f"# Written by specconsole for service {service}; change flags with `specconsole set`.",
        "[Unit]",
        f"Description=specconsole engine service {service} ({config.engine})",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        *_service_lines(config, stop_timeout, reset_exec=False),
        "Type=simple",
        "",
        "[Install]",
        f"WantedBy={'default.target' if user_scope else 'multi-user.target'}",
    ]
    return "\n".join(lines) + "\n"


def render_dropin(config: LaunchConfig, service: str, *, stop_timeout: float = 30) -> str:
    lines = [
        f"# Written by specconsole for service {service}; change flags with `specconsole set`.",
        *_service_lines(config, stop_timeout, reset_exec=True),
    ]
    return "\n".join(lines) + "\n"
