"""User-facing errors.

Every error a user can cause is a `ConsoleError` whose message is one sentence that says
what happened and what to do. The CLI prints `str(err)` and exits non-zero; the TUI shows
it in a notification. Anything that is not a `ConsoleError` is a bug and may traceback.
"""

from __future__ import annotations


class ConsoleError(Exception):
    """An error the user can act on; its message is shown as is."""


class ConfigError(ConsoleError):
    """A host profile is missing, malformed or invalid."""


class TransportError(ConsoleError):
    """A command, file or port on a host could not be reached."""


class FlagError(ConsoleError):
    """A flag change was refused; nothing was written."""


class ServiceError(ConsoleError):
    """The engine service could not be started, stopped or followed."""
