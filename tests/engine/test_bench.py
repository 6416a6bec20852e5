"""engine.bench: one JSON object keyed by method, per text type, lossless against AR."""

from __future__ import annotations

import json
import subprocess
import sys

from engine.bench import load_prompts, repeated_ngram_fraction
from engine.corpus import BENCH_PROMPTS_PATH


def test_shipped_prompt_set_has_code_and_prose():
    rows = load_prompts(BENCH_PROMPTS_PATH, None, None)
    types = {r["type"] for r in rows}
    assert types == {"code", "prose"}
    assert all(r["prompt"].strip() for r in rows)
    code = [r for r in rows if r["type"] == "code"]
    assert len(code) >= 8 and all(r["prompt"].rstrip().endswith(":") for r in code)


def test_bench_json_on_tiny_pair(tiny_pair, tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(
        json.dumps({"id": "c", "type": "code", "prompt": "def f(x):\n"}) + "\n"
        + json.dumps({"id": "p", "type": "prose", "prompt": "The cat sat"}) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "engine.bench", "--model-path", str(tiny_pair[0]),
         "--draft-model-path", str(tiny_pair[1]), "--prompts", str(prompts),
         "--max-new-tokens", "12", "--budget", "8", "--json"],
        capture_output=True, text=True, timeout=240, check=True)
    report = json.loads(out.stdout)
    assert set(report) == {"ar", "dflash", "ddtree"}
    for m, r in report.items():
        assert r["lossless_vs_ar"] is True, m
        assert set(r["by_type"]) == {"code", "prose"}
        assert r["decode_tokens"] == 2 * 11  # prefill's token excluded
        assert r["decode_tok_s"] > 0 and r["step_ms"] > 0 and r["commit_mean"] >= 1.0
    assert report["ar"]["speedup_vs_ar"] == 1.0
    assert report["ar"]["commit_mean"] == 1.0
    assert report["ddtree"]["budget"] == 8


def test_bench_rejects_unknown_method(tiny_pair):
    out = subprocess.run([sys.executable, "-m", "engine.bench", "--methods", "ar,medusa"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "unknown method 'medusa'" in out.stderr


def test_repeated_ngram_fraction_flags_loops():
    assert repeated_ngram_fraction(list(range(40))) == 0.0
    loop = [1, 2, 3, 4] * 10
    assert repeated_ngram_fraction(loop) > 0.8
    assert repeated_ngram_fraction([1, 2, 3]) == 0.0  # shorter than one n-gram
