"""`specconsole gpu HOST`: the host's GPUs now (or every few seconds), over its link.

Utilisation, memory, power and clocks per GPU from nvidia-smi's query mode. A host with no
NVIDIA GPU is an answer, not an error: one line saying so (or `"available": false`),
exit 0. `--watch S` prints a row per GPU every S seconds (JSON lines with `--json`) until
Ctrl-C or `--count` rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence

from console import config as profiles
from console.analysis.gpu_sample import GpuSample
from console.commands.base import HostCommand, err, host_key_confirmer
from console.measure.gpu import GpuTelemetry
from console.transport import Transport, open_transport


def register(sub: argparse._SubParsersAction, host_command: HostCommand) -> None:
    p = host_command("gpu", "Show the host's GPUs: utilisation, memory, power, clocks.")
    p.add_argument("--json", action="store_true")
    p.add_argument("--watch", type=_positive_float, metavar="S", help="sample every S seconds")
    p.add_argument("--count", type=int, help="with --watch: stop after this many samples")
    p.set_defaults(func=cmd_gpu)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def gpu_rows(samples: Sequence[GpuSample], *, with_time: bool = False) -> list[tuple[str, ...]]:
    rows = []
    for s in samples:
        memory = "-"
        if s.memory_used_mib is not None:
            memory = f"{s.memory_used_mib:.0f}/{_num(s.memory_total_mib, '.0f')}"
        row = (
            str(s.index),
            _num(s.utilization_pct, ".0f"),
            memory,
            _num(s.power_w, ".1f"),
            _num(s.sm_clock_mhz, ".0f"),
            _num(s.mem_clock_mhz, ".0f"),
        )
        rows.append((time.strftime("%H:%M:%S", time.localtime(s.t)), *row) if with_time else row)
    return rows


GPU_HEADERS = ("GPU", "UTIL %", "MEM MIB", "POWER W", "SM MHZ", "MEM MHZ")


def gpu_table(samples: Sequence[GpuSample], *, with_time: bool = False) -> str:
    """The samples as an aligned table (also what `history show` prints)."""
    from console.analysis.format import table  # one table style for every command

    headers = ("TIME", *GPU_HEADERS) if with_time else GPU_HEADERS
    first = 1 if with_time else 0
    right = set(range(first, first + len(GPU_HEADERS)))
    return table(headers, gpu_rows(samples, with_time=with_time), right=right)


async def cmd_gpu(args: argparse.Namespace) -> int:
    profile = profiles.load_profile(args.host)
    transport: Transport = open_transport(
        profile, confirm_host_key=host_key_confirmer(args.accept_new_host_key)
    )
    try:
        telemetry = GpuTelemetry(transport)
        if not await telemetry.available():
            if args.json:
                print(json.dumps({"host": args.host, "available": False,
                                  "reason": telemetry.reason, "gpus": []}))  # fmt: skip
            else:
                print(f"{args.host}: no GPU telemetry ({telemetry.reason}).")
            return 0
        taken = 0
        while True:
            samples = await telemetry.sample()
            taken += 1
            _print(args, samples, first=taken == 1)
            if args.watch is None or (args.count is not None and taken >= args.count):
                return 0
            await asyncio.sleep(args.watch)
    finally:
        await transport.close()


def _print(args: argparse.Namespace, samples: list[GpuSample], *, first: bool) -> None:
    if args.json:
        data = {"host": args.host, "available": True, "gpus": [s.as_dict() for s in samples]}
        # one object per line when watching, so a reader can follow it line by line
        print(json.dumps(data) if args.watch else json.dumps(data, indent=2), flush=True)
        return
    if not samples:
        err(f"{args.host}: nvidia-smi gave no GPU rows this time.")
        return
    text = gpu_table(samples, with_time=args.watch is not None)
    lines = text.splitlines()
    print("\n".join(lines if first else lines[1:]), flush=True)
