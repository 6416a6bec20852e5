"""One doctor check's answer, and a host's report: a line each, or JSON for scripts.

Every answer that is not ok carries its fix, one sentence; a report fails when any check
fails (warnings say something is off that the console works around)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal

from console.errors import ConsoleError

Status = Literal["ok", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "skip")
NAME_WIDTH = 14  # the longest check name, so the details line up


@dataclass(frozen=True)
class Check:
    check: str  # a stable name, e.g. "sftp", "metrics", "port"
    status: Status
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        if self.status in ("warn", "fail") and not self.fix:
            raise ValueError(f"the {self.check} check says {self.status} without a fix")

    def line(self) -> str:
        text = f"{self.status:<4}  {self.check:<{NAME_WIDTH}} {self.detail}"
        return f"{text}; fix: {self.fix}" if self.fix and self.status != "ok" else text

    def as_dict(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail,
                "fix": self.fix}  # fmt: skip


def ok(check: str, detail: str) -> Check:
    return Check(check, "ok", detail)


def warn(check: str, detail: str, fix: str) -> Check:
    return Check(check, "warn", detail, fix)


def fail(check: str, detail: str, fix: str) -> Check:
    return Check(check, "fail", detail, fix)


def skip(check: str, detail: str) -> Check:
    return Check(check, "skip", detail)


@dataclass(frozen=True)
class DoctorReport:
    host: str
    checks: tuple[Check, ...]

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)

    def by_name(self, name: str) -> Check:
        return next(c for c in self.checks if c.check == name)

    def summary(self) -> str:
        counts = Counter(c.status for c in self.checks)
        told = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
        return f"{self.host}: {told}"

    def lines(self) -> list[str]:
        """What `specconsole doctor HOST` prints and the console's Doctor screen shows."""
        return [*(c.line() for c in self.checks), self.summary()]

    def as_json(self) -> list[dict[str, str]]:
        return [c.as_dict() for c in self.checks]


async def guarded(name: str, run: Awaitable[Check], fix: str) -> Check:
    """A check whose host command failed (a dropped link, a timeout) is that check's
    failure, with `fix`, not the end of the report."""
    try:
        return await run
    except ConsoleError as exc:
        return fail(name, str(exc).rstrip("."), fix)
