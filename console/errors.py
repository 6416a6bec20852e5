"""User-facing errors.

Every error a user can cause is a `ConsoleError` whose message is one sentence that says
what happened and what to do. The CLI prints `str(err)` and exits non-zero; the TUI shows
it in a notification. Anything that is not a `ConsoleError` is a bug and may traceback.
"""

from __future__ import annotations


class ConsoleError(Exception):
    """An error the user can act on; its message is shown as is."""


def one_line(exc: BaseException) -> str:
    """A user error as it is; a bug as one line that names it (never a traceback)."""
    if isinstance(exc, ConsoleError):
        return str(exc)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"internal error ({type(exc).__name__}{': ' + text if text else ''})."


class ConfigError(ConsoleError):
    """A host profile is missing, malformed or invalid."""


class TransportError(ConsoleError):
    """A command, file or port on a host could not be reached."""


class FlagError(ConsoleError):
    """A flag change was refused; nothing was written."""


class ServiceError(ConsoleError):
    """The engine service could not be started, stopped or followed."""
