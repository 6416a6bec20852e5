"""Counts an operator types: "64", "1k", "64,512,1k". One parser for the CLI's options
and the TUI's fields, so a list that one face accepts the other accepts too, with the
same reading of "k" (thousand) and the same sentence when it is wrong."""

from __future__ import annotations

from console.errors import ConsoleError


class NumberListError(ConsoleError):
    """A typed count or list of counts that is not one."""


def parse_count(text: str, what: str) -> int:
    """A positive whole number, "k" meaning thousand: "1k" is 1000. `what` names the
    field in the error ("Max tokens must be a whole number, not 'x'.")."""
    raw = text.strip().lower()
    scale = 1000 if raw.endswith("k") else 1
    try:
        value = int(raw.removesuffix("k")) * scale
    except ValueError:
        raise NumberListError(f"{what} must be a whole number, not {text!r}.") from None
    if value < 1:
        raise NumberListError(f"{what} must be at least 1, not {value}.")
    return value


def parse_counts(text: str, what: str) -> list[int]:
    """Comma-separated counts ("64,512,1k"), each as `parse_count` reads it; at least one."""
    values = [parse_count(part, what) for part in text.split(",") if part.strip()]
    if not values:
        raise NumberListError(f"{what} needs at least one number (e.g. 256,1024).")
    return values
