"""`specconsole doctor HOST`: every check of a host, one line each, the fix of each that
is not ok; `--json` a list of {check, status, detail, fix}. Exits 1 when a check fails
(warnings alone exit 0). The checks are `console.doctor`'s; the console's Doctor entry
(palette, key D) shows the same lines."""

from __future__ import annotations

import argparse
import json

from console.commands.base import EXIT_ERROR, HostCommand, host_key_confirmer, with_service
from console.doctor import run_doctor
from console.service import EngineService
from console.transport import HostKeyInfo


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    p = host_command(
        "doctor",
        "Check a host: SSH, sudo, login shell, engine, flags, /metrics, logs, GPU, clock, "
        "disk and who else uses its port; each problem with its fix.",
    )
    p.add_argument("--json", action="store_true",
                   help="a JSON list of {check, status, detail, fix}")  # fmt: skip
    p.set_defaults(func=cmd_doctor)


async def cmd_doctor(args: argparse.Namespace) -> int:
    # The host key goes through the usual confirmation; what it trusted is told in the
    # host-key line (a refusal is the report's failure, not an error).
    trusted: list[HostKeyInfo] = []
    confirm = host_key_confirmer(args.accept_new_host_key)

    async def recording(info: HostKeyInfo) -> bool:
        accepted = await confirm(info)
        if accepted:
            trusted.append(info)
        return accepted

    async def body(service: EngineService) -> int:
        report = await run_doctor(service, trusted=trusted)
        if args.json:
            print(json.dumps(report.as_json(), indent=2))
        else:
            print("\n".join(report.lines()))
        return EXIT_ERROR if report.failed else 0

    return await with_service(args, body, on_event=None, confirm_host_key=recording)
