"""`specconsole doctor HOST`: one line per check of a host (the link, the engine, what
the console reads from it, the host, who else uses it), each not-ok one with its fix."""

from __future__ import annotations

from console.doctor.check import Check, DoctorReport, Status
from console.doctor.run import run_doctor

__all__ = ["Check", "DoctorReport", "Status", "run_doctor"]
