"""Server overhead: decode tok/s through `/generate` vs `engine.decode.Decoder` in-process.

`python -m engine.bench.server` starts `specengine serve` as a subprocess and, in the same
run, loads the same weights into this process. It then alternates (so machine drift hits
both alike): one in-process `Decoder.generate` and one non-streaming `/generate`, on the same
prompt with ignore_eos and the same max_new_tokens. Decode throughput excludes prefill on
both sides: in-process it is Generation.decode_tok_per_s (tokens after the first / summed
round time); through the server it is (completion_tokens - 1) / meta_info.decode_time
(server-side, first token to last token). Prints both medians and their ratio (target >=
0.95). Without the bundled pair (not trained yet) it uses a random pair of the given size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from engine.serve.logs import READY_MESSAGE


def _pair(args) -> tuple[Path, Path, str]:
    from engine.checkpoint import DEFAULT_DRAFTER_PATH, DEFAULT_TARGET_PATH

    if args.model_path:
        return Path(args.model_path), Path(args.draft_model_path or DEFAULT_DRAFTER_PATH), "given"
    if (DEFAULT_TARGET_PATH / "config.json").exists() and (
        DEFAULT_DRAFTER_PATH / "config.json"
    ).exists():
        return DEFAULT_TARGET_PATH, DEFAULT_DRAFTER_PATH, "bundled"
    from engine.tiny import make_random_pair

    out = Path(tempfile.mkdtemp(prefix="bench_server_"))
    t, d = make_random_pair(
        out,
        seed=0,
        hidden=args.random_hidden,
        layers=args.random_layers,
        inter=4 * args.random_hidden,
        heads=8,
        kv_heads=4,
        max_pos=2048,
    )
    return t, d, f"random (hidden {args.random_hidden}, {args.random_layers} layers)"


def bookkeeping_us_per_round(tokenizer, *, rounds: int = 20000, commit: int = 3) -> float:
    """Server-side cost per verify round outside the decoder (stats, metrics, stop checks),
    timed with a decoder that yields precomputed steps, so it is free of machine noise."""
    from engine.decode import RoundStats, Step
    from engine.serve.metrics import DecodeCounters, ServerMetrics
    from engine.serve.worker import EngineWorker, GenParams, Job

    stats = RoundStats(commit, 100, 0.0, 0.0, 0.0, 0.0, 8)

    class ReplayDecoder:
        def stream(
            self, prompt_ids, *, max_new_tokens, eos_token_ids=(), ignore_eos=False, sampling=None
        ):
            yield Step([65], None, prefill_ms=0.0)
            for i in range(rounds):
                yield Step(
                    [65] * commit, stats, finish_reason="length" if i == rounds - 1 else None
                )

    metrics = ServerMetrics("bench")
    worker = EngineWorker(
        ReplayDecoder(),
        tokenizer,
        metrics=metrics,
        eos_token_ids=(256,),
        counters=DecodeCounters(
            metrics, interval=40, context_length=1 << 30, block_size=8, speculative=True
        ),
    )
    job = Job(GenParams([1, 2, 3], rounds * commit + 1, ignore_eos=True), on_done=lambda r: None)
    t = time.perf_counter()
    worker._run(job)
    return (time.perf_counter() - t) / rounds * 1e6


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m engine.bench.server", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "--model-path", default=None, help="target directory (default: the bundled pair)"
    )
    ap.add_argument(
        "--draft-model-path", default=None, help="drafter directory (default: the bundled pair)"
    )
    ap.add_argument("--algorithm", default="DDTREE", choices=["NONE", "DFLASH", "DDTREE"])
    ap.add_argument("--prompt", default="def quicksort(items):\n    ")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--random-hidden", type=int, default=256)
    ap.add_argument("--random-layers", type=int, default=4)
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch/OpenMP threads on both sides, so neither starves the other",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return ap


def _serve_command(args, target: Path, drafter: Path, port: int) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "engine.cli",
        "serve",
        "--model-path",
        str(target),
        "--speculative-algorithm",
        args.algorithm,
        "--port",
        str(port),
        "--decode-log-interval",
        "1000000",
    ]
    if args.algorithm != "NONE":
        cmd += ["--speculative-draft-model-path", str(drafter)]
    return cmd


def _wait_ready(proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 300
    while READY_MESSAGE not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"server did not start:\n{log.read_text()}")
        time.sleep(0.1)


def _pairs(args, dec, ids: list[int], n: int, eos, port: int) -> tuple[list, list, list]:
    """`repeats` back-to-back pairs: one in-process generate, one `/generate`."""
    local, served, commits = [], [], []
    body = {
        "input_ids": ids,
        "sampling_params": {"max_new_tokens": n, "ignore_eos": True, "temperature": 0},
    }
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
        client.post(
            "/generate",
            json={**body, "sampling_params": {**body["sampling_params"], "max_new_tokens": 16}},
        ).raise_for_status()
        for _ in range(args.repeats):
            g = dec.generate(ids, max_new_tokens=n, eos_token_ids=eos, ignore_eos=True)
            local.append(g.decode_tok_per_s)
            r = client.post("/generate", json=body)
            r.raise_for_status()
            meta = r.json()["meta_info"]
            if r.json()["output_ids"] != g.tokens:
                raise SystemExit("server output differs from the in-process decoder")
            served.append((meta["completion_tokens"] - 1) / meta["decode_time"])
            commits.append(meta["spec_accept_length"])
    return local, served, commits


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    import torch

    from engine.checkpoint import load_bundle
    from engine.decode import Decoder
    from engine.serve.args import METHOD_FOR_ALGORITHM

    torch.set_num_threads(args.threads)
    target, drafter, source = _pair(args)
    spec = args.algorithm != "NONE"
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        _serve_command(args, target, drafter, port),
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS=str(args.threads)),
    )
    try:
        bundle = load_bundle(target, drafter if spec else None, load_drafter=spec)
        dec = Decoder(
            bundle.target,
            bundle.drafter if spec else None,
            method=METHOD_FOR_ALGORITHM[args.algorithm],
            max_context=bundle.max_context,
        )
        ids = bundle.tokenizer.encode(args.prompt)
        n = min(args.max_new_tokens, bundle.max_context - len(ids) - 1)
        eos = (bundle.tokenizer.eos_token_id,)
        dec.generate(ids, max_new_tokens=16, eos_token_ids=eos, ignore_eos=True)  # warm up
        _wait_ready(proc, Path(log.name))
        local, served, commits = _pairs(args, dec, ids, n, eos, port)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
        Path(log.name).unlink(missing_ok=True)
    overhead_us = bookkeeping_us_per_round(bundle.tokenizer)
    step_ms = 1000.0 * statistics.median(commits) / statistics.median(served)
    result = {
        "bookkeeping_us_per_round": round(overhead_us, 1),
        "bookkeeping_fraction_of_step": round(overhead_us / 1000.0 / step_ms, 5),
        "weights": source,
        "algorithm": args.algorithm,
        "prompt_tokens": len(ids),
        "max_new_tokens": n,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "in_process_tok_s": round(statistics.median(local), 2),
        "server_tok_s": round(statistics.median(served), 2),
        # Median of per-pair ratios: each pair ran back to back, so load from other
        # processes on the machine mostly cancels within a pair.
        "ratio": round(statistics.median(s / m for s, m in zip(served, local, strict=True)), 4),
        "ratio_of_medians": round(statistics.median(served) / statistics.median(local), 4),
        "accept_length": round(statistics.fmean(commits), 3),
    }
    if args.json:
        print(json.dumps(result))
    else:
        _print_result(result, source, args, len(ids), n, step_ms)
    return 0


def _print_result(result: dict, source: str, args, prompt_len: int, n: int, step_ms: float):
    print(
        f"weights: {source}; {args.algorithm}; prompt {prompt_len} tokens; "
        f"{n} new tokens x {args.repeats} (ignore_eos, greedy)"
    )
    print(
        f"in-process Decoder : {result['in_process_tok_s']:9.2f} tok/s (decode, prefill excluded)"
    )
    print(f"server /generate   : {result['server_tok_s']:9.2f} tok/s (meta_info.decode_time)")
    print(
        f"ratio server/in-process: {result['ratio']:.3f} (median of {args.repeats} "
        f"back-to-back pairs; ratio of medians {result['ratio_of_medians']:.3f}; "
        f"target >= 0.95)"
    )
    print(
        f"server bookkeeping : {result['bookkeeping_us_per_round']:.1f} us per verify round "
        f"= {100 * result['bookkeeping_fraction_of_step']:.2f}% of a {step_ms:.2f} ms step "
        f"(replayed steps, noise-free)"
    )


if __name__ == "__main__":
    sys.exit(main())
