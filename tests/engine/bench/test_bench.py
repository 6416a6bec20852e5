"""engine.bench: one JSON object keyed by method, per text type, lossless against AR; the
verdict is the median of paired per-prompt ratios, so a noisy machine does not move it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.bench.prompts import NEAR_DUPLICATE, load_prompts, similarity
from engine.bench.summary import (
    PromptRuns,
    quartiles,
    repeated_ngram_fraction,
    summarize,
    tukey_outliers,
)
from engine.decode import Generation, RoundStats
from engine.train.corpus import BENCH_PROMPTS_PATH


def test_shipped_prompt_set_holds_no_near_duplicates():
    rows = load_prompts(BENCH_PROMPTS_PATH, None, None)
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            assert similarity(a["prompt"], b["prompt"]) < NEAR_DUPLICATE, (a["id"], b["id"])


def test_loader_keeps_the_first_of_near_duplicates_and_says_so(tmp_path, capsys):
    codec = "class Codec(codecs.Codec):\n    def encode(self, input, errors='strict'):\n"
    rows = [
        {"id": "a", "type": "code", "prompt": codec},
        {"id": "b", "type": "code", "prompt": codec.replace("strict", "ignore")},
        {"id": "c", "type": "code", "prompt": "def quicksort(items):\n"},
    ]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [r["id"] for r in load_prompts(path, None, None)] == ["a", "c"]
    assert "near-duplicate prompt(s) of earlier ones: b" in capsys.readouterr().err


def test_shipped_prompt_set_has_code_and_prose():
    rows = load_prompts(BENCH_PROMPTS_PATH, None, None)
    types = {r["type"] for r in rows}
    assert types == {"code", "prose"}
    assert all(r["prompt"].strip() for r in rows)
    code = [r for r in rows if r["type"] == "code"]
    assert len(code) >= 8 and all(r["prompt"].rstrip().endswith(":") for r in code)


@pytest.mark.slow  # a whole benchmark round on the tiny pair
def test_bench_json_on_tiny_pair(tiny_pair, tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(
        json.dumps({"id": "c", "type": "code", "prompt": "def f(x):\n"})
        + "\n"
        + json.dumps({"id": "p", "type": "prose", "prompt": "The cat sat"})
        + "\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.bench",
            "--model-path",
            str(tiny_pair[0]),
            "--draft-model-path",
            str(tiny_pair[1]),
            "--prompts",
            str(prompts),
            "--max-new-tokens",
            "12",
            "--budget",
            "8",
            "--budgets",
            "2,8",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    report = json.loads(out.stdout)
    assert set(report) == {"ar", "dflash", "ddtree"}
    for m, r in report.items():
        assert r["lossless_vs_ar"] is True, m
        assert set(r["by_type"]) == {"code", "prose"}
        assert r["decode_tokens"] == 2 * 11  # prefill's token excluded
        assert r["decode_tok_s"] > 0 and r["step_ms"] > 0 and r["commit_mean"] >= 1.0
        phases = [r[k] for k in ("draft_ms", "tree_ms", "verify_ms", "commit_ms")]
        assert all(p >= 0 for p in phases) and r["verify_ms"] > 0
        # Medians of phases need not sum to the median step, but never exceed it by much.
        assert sum(phases) <= 1.5 * r["step_ms"]
    assert report["ar"]["draft_ms"] == report["ar"]["commit_ms"] == 0.0  # AR only verifies
    assert report["ddtree"]["draft_ms"] > 0 and report["ddtree"]["tree_ms"] > 0
    assert report["ar"]["speedup_vs_ar"] == 1.0
    assert report["ar"]["commit_mean"] == 1.0
    assert report["ddtree"]["budget"] == 8
    for r in report.values():  # repeats, spread and memory are all in the JSON
        assert r["repeat"] == 3
        assert [p["id"] for p in r["per_prompt"]] == ["c", "p"]
        for p in r["per_prompt"]:
            assert len(p["decode_tok_s"]) == 3 and len(p["speedup_vs_ar"]) == 3
            assert p["kv_cache_mib"] > 0 and p["device_peak_mib"] is None  # CPU
        lo, hi = r["speedup_iqr"]
        assert lo <= r["speedup_vs_ar"] <= hi and r["speedup_outliers"] >= 0
        assert r["repeat_spread"] >= 0 and r["kv_cache_peak_mib"] > 0
        assert r["by_type"]["code"]["speedup_iqr"][0] <= r["by_type"]["code"]["speedup_vs_ar"]
    assert report["ar"]["speedup_iqr"] == [1.0, 1.0] and report["ar"]["repeat_spread"] == 0
    # The drafter's cache is memory AR does not need.
    assert report["ddtree"]["kv_cache_peak_mib"] > report["ar"]["kv_cache_peak_mib"]
    # Each budget is an arm of its own (the DDTree arm's budget 8 is not run twice).
    dd = report["ddtree"]
    assert list(dd["by_budget"]) == ["2", "8"]
    for b, row in dd["by_budget"].items():
        assert row["lossless_vs_ar"] is True, b
        assert set(row["by_type"]) == {"code", "prose"}
        for s in (row["all"], *row["by_type"].values()):
            assert s["commit_mean"] >= 1.0 and s["step_ms"] > 0 and s["verify_ms"] > 0
            assert s["speedup_iqr"][0] <= s["speedup_vs_ar"] <= s["speedup_iqr"][1]
    assert dd["by_budget"]["8"]["all"]["commit_mean"] == dd["commit_mean"]
    assert set(dd["best_budget"]) == {"all", "code", "prose"}
    all_rows = {b: r["all"]["speedup_vs_ar"] for b, r in dd["by_budget"].items()}
    assert all_rows[str(dd["best_budget"]["all"])] == max(all_rows.values())
    assert dd["budget_is_best"] == (dd["best_budget"]["all"] == 8)


def test_bench_rejects_unknown_method_and_bad_numbers(tiny_pair):
    for args, named in (
        (["--methods", "ar,medusa"], "unknown method 'medusa'"),
        (["--repeat", "0"], "--repeat"),
        (["--temperature", "-1"], "temperature"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "engine.bench", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2 and named in out.stderr, (args, out.stderr)


def _gen(ms_per_round: float, rounds: int = 8, commit: int = 1) -> Generation:
    g = Generation(prompt_len=4, tokens=[1] * (rounds * commit + 1), kv_cache_bytes=1 << 20)
    g.rounds = [RoundStats(commit, 4, 0.0, 0.0, ms_per_round, 0.0, 1)] * rounds
    return g


def _prompt(
    ar_ms: list[float], method_ms: list[float], kind: str = "code"
) -> tuple[PromptRuns, PromptRuns]:
    """AR and method runs of one prompt, repeat by repeat (paired as the bench pairs them)."""
    ar, m = PromptRuns("x", kind), PromptRuns("x", kind)
    for a, b in zip(ar_ms, method_ms, strict=True):
        ga, gm = _gen(a), _gen(b)
        ar.runs.append(ga)
        m.runs.append(gm)
        ar.ratios.append(1.0)
        m.ratios.append(gm.decode_tok_per_s / ga.decode_tok_per_s)
    return ar, m


def test_verdict_is_the_median_of_paired_ratios_not_summed_totals():
    # A slow prompt (10 ms/token) with a 1.5x method and two fast ones (1 ms) with 3x:
    # summed tokens over summed time would be dominated by the slow prompt (about 1.7x).
    prompts = [
        _prompt([10] * 3, [10 / 1.5] * 3),
        _prompt([1] * 3, [1 / 3] * 3),
        _prompt([1] * 3, [1 / 3] * 3),
    ]
    s = summarize([m for _, m in prompts])
    assert s["speedup_vs_ar"] == pytest.approx(3.0)
    assert s["speedup_iqr"] == pytest.approx([2.25, 3.0])
    assert s["speedup_outliers"] == 0 and s["repeat_spread"] == 0
    assert s["decode_tok_s"] == pytest.approx(3000.0)  # median prompt, not the pooled rate
    assert s["kv_cache_peak_mib"] == 1.0 and s["device_peak_mib"] is None


def test_a_noisy_repeat_does_not_move_the_verdict():
    quiet = [_prompt([2, 2, 2], [1, 1, 1]) for _ in range(5)]
    # Another process takes the cores: one repeat of each prompt runs 4x slower for both
    # methods (paired, so the ratio holds), and one prompt's method run alone is hit.
    noisy = [_prompt([2, 8, 2], [1, 4, 1]) for _ in range(4)] + [_prompt([2, 2, 2], [1, 6, 1])]
    assert summarize([m for _, m in quiet])["speedup_vs_ar"] == pytest.approx(2.0)
    s = summarize([m for _, m in noisy])
    assert s["speedup_vs_ar"] == pytest.approx(2.0)
    assert s["repeat_spread"] == 0  # the median prompt's repeats agree
    assert s["decode_tok_s"] == pytest.approx(1000.0)


def test_quartiles_and_outliers():
    assert quartiles([2.0]) == (2.0, 2.0, 2.0)
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 3.0, 4.0)
    assert tukey_outliers([2.0, 2.1, 1.9, 2.0, 2.05, 9.0]) == 1
    assert tukey_outliers([1.0, 1.0, 1.0]) == 0


def test_repeated_ngram_fraction_flags_loops():
    assert repeated_ngram_fraction(list(range(40))) == 0.0
    loop = [1, 2, 3, 4] * 10
    assert repeated_ngram_fraction(loop) > 0.8
    assert repeated_ngram_fraction([1, 2, 3]) == 0.0  # shorter than one n-gram


def test_bench_temperature_reports_both_temperatures(tiny_pair, tmp_path, capsys):
    """--temperature runs every arm greedy and sampled; sampled arms are not compared with
    AR token by token (they emit other tokens), and the table puts both side by side."""
    from engine.bench.table import print_temperatures

    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "c", "type": "code", "prompt": "def f(x):\n"}) + "\n")
    args = ["--model-path", str(tiny_pair[0]), "--draft-model-path", str(tiny_pair[1])]
    args += ["--prompts", str(prompts), "--max-new-tokens", "10", "--repeat", "1"]
    args += ["--methods", "ar,ddtree", "--budgets", "none", "--temperature", "1", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "engine.bench", *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    reports = json.loads(out.stdout)["by_temperature"]
    assert list(reports) == ["0", "1"]
    for t, report in reports.items():
        assert set(report) == {"ar", "ddtree"}
        for r in report.values():
            assert r["decode_tokens"] == 9 and r["commit_mean"] >= 1.0
            assert 0 <= r["repeated_8gram_frac"] <= 1
            assert r["lossless_vs_ar"] is (True if t == "0" else None)
    print_temperatures(reports)
    table = capsys.readouterr().out
    assert "T=0" in table and "T=1" in table and "8g-rep" in table
    assert any(line.strip().startswith("ddtree") for line in table.splitlines())


def test_concurrency_arm_times_decode_apart_from_prefill(tiny_pair, tmp_path, capsys):
    """--concurrency: per level and arm, the aggregate decode rate is decode tokens over
    the verify rounds' time only (a stream's prefill runs alone when it joins and is
    timed apart), with its spread over --repeat and the ratio to the first level paired
    repeat by repeat."""
    from engine.bench.__main__ import build_parser
    from engine.bench.concurrency import print_concurrency, run_concurrency

    prompts = tmp_path / "p.jsonl"
    rows = [("c", "code", "def f(x):\n"), ("p", "prose", "The cat sat on the mat")]
    prompts.write_text("".join(json.dumps({"id": i, "type": t, "prompt": p}) + "\n"
                               for i, t, p in rows))  # fmt: skip
    args = build_parser().parse_args(
        ["--model-path", str(tiny_pair[0]), "--draft-model-path", str(tiny_pair[1]),
         "--prompts", str(prompts), "--max-new-tokens", "9", "--repeat", "2",
         "--methods", "ar,ddtree", "--budgets", "none", "--concurrency", "1,3"]
    )  # fmt: skip
    report = run_concurrency(args)
    assert set(report) == {"ar", "ddtree"}
    for levels in report.values():
        assert [lv["concurrency"] for lv in levels] == [1, 3]
        assert levels[0]["x_first_level"] == {"median": 1.0, "min": 1.0, "max": 1.0}
        for lv in levels:
            assert len(lv["runs"]) == 2
            for run in lv["runs"]:
                # a stream's first token is prefill's, the other 8 decode's; a level
                # cycles the 2 prompts until it has at least N requests
                requests = 2 * -(-lv["concurrency"] // 2)
                assert run["first_tokens"] == requests and run["decode_tokens"] == 8 * requests
                assert run["aggregate_tok_s"] == pytest.approx(
                    run["decode_tokens"] / run["decode_s"]
                )
                assert run["per_stream_tok_s"] == pytest.approx(
                    run["aggregate_tok_s"] / lv["concurrency"]
                )
                wall = (run["decode_tokens"] + run["first_tokens"]) / (
                    run["decode_s"] + run["prefill_s"]
                )
                assert run["wall_tok_s"] == pytest.approx(wall) and run["prefill_s"] > 0
            agg = lv["aggregate_tok_s"]
            assert agg["min"] <= agg["median"] <= agg["max"]
            ratios = [r["aggregate_tok_s"] / f["aggregate_tok_s"]
                      for r, f in zip(lv["runs"], levels[0]["runs"], strict=True)]  # fmt: skip
            assert lv["x_first_level"]["median"] == pytest.approx(sum(ratios) / 2)
    print_concurrency(report)
    table = capsys.readouterr().out
    assert "prefill apart" in table and table.count("ddtree") == 2
