"""The context-curve benchmark (same text, same cut point, only the visible past changes)
and the AR comparison against transformers' generate()."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.bench.context import CUT_STRIDE, Passage, curves, passages, run, same_text_curve
from engine.checkpoint import load_bundle
from engine.decode import Decoder
from engine.train.corpus import split_files


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Enough files that the stable hash split holds some out, with code and docstrings."""
    root = tmp_path_factory.mktemp("corpus")
    for i in range(200):
        body = "".join(
            f'def f{i}_{j}(x):\n    """Return x plus {j}. It is a small helper used in tests. '
            f'Nothing else happens here, and nothing else ever will."""\n    return x + {j}\n\n'
            for j in range(12)
        )
        (root / f"m{i}.py").write_text(body)
    assert split_files(root)[1], "the corpus has held-out files"
    return root


@pytest.mark.parametrize("kind", ["code", "prose"])
def test_passages_end_at_a_cut_with_enough_text_before(corpus, kind):
    texts = passages(kind, 3, need=200, root=corpus)
    assert len(texts) == 3 and len({t.text for t in texts}) == 3, "distinct cut points"
    for t in texts:
        assert len(t.text) >= 200 and t.type == kind
        if kind == "code":
            assert t.text.splitlines()[-1].lstrip().startswith("def ") and t.text.endswith(":\n")
        else:
            assert t.text.endswith(". ")
            assert "return x" not in t.text, "prose is docstrings, not code"


def test_every_context_continues_the_same_place(tiny_pair):
    b = load_bundle(*tiny_pair)
    seen: list[tuple[list[int], int]] = []

    class Recording(Decoder):
        def generate(self, prompt_ids, **kw):
            seen.append((list(prompt_ids), kw["max_new_tokens"]))
            return super().generate(prompt_ids, **kw)

    dec = Recording(b.target, b.drafter, method="ddtree")
    text = "".join(f"line {i} of the passage\n" for i in range(40))
    report = run(dec, [Passage("code", "t", text)], [16, 48, 96], 6, b.tokenizer, cuts=3)
    full = b.tokenizer.encode(text)
    generations = [p for p, n in seen if n == 6]
    assert [len(p) for p in generations] == [16, 48, 96]
    assert all(p == full[-len(p) :] for p in generations), "each prompt is the tail of the text"
    assert [r["context"] for r in report["rows"]] == [16, 48, 96]
    assert all(r["commit"] >= 1 and r["step_ms"] > 0 for r in report["rows"])
    # Same text: every cut point at every context, a tail of the text ending at that cut,
    # asking for one more token than a block commits so the first round is never capped.
    firsts = [p for p, n in seen if n == dec.block_size + 1]
    assert len(firsts) == 3 * 3 == len(report["first_round_rows"])
    for row, p in zip(report["first_round_rows"], firsts, strict=True):
        end = len(full) - row["cut"] * CUT_STRIDE
        assert len(p) == row["context"] and p == full[end - row["context"] : end]
        assert 1 <= row["commit"] <= dec.block_size
    with pytest.raises(ValueError, match="these contexts need"):
        run(dec, [Passage("code", "t", text)], [16, len(full)], 6, b.tokenizer, cuts=2)


def _first_rows(commits: dict[int, list[float]]) -> list[dict]:
    """Rows for one text type: `commits[context]` holds one commit per text."""
    return [
        {"type": "code", "source": f"t{i}", "cut": 0, "context": c, "commit": k}
        for c, ks in commits.items()
        for i, k in enumerate(ks)
    ]


def test_same_text_curve_judges_the_ratio_of_means_with_a_paired_interval():
    got = same_text_curve(_first_rows({64: [4.0, 2.0, 6.0], 1900: [3.5, 1.9, 5.5]}), [64, 1900])
    assert [p["commit_mean"] for p in got["points"]] == [4.0, pytest.approx(10.9 / 3)]
    assert got["commit_longest_over_shortest"] == pytest.approx(10.9 / 12)
    assert got["stable"] is True  # 9% down
    lo, hi = got["ci95"]
    assert lo < 10.9 / 12 < hi < 1.0, "every text fell, so every resample falls"
    assert hi - lo > 0.01, "the interval comes from resampling texts, not one point"
    fell = same_text_curve(_first_rows({64: [4.0, 2.0, 6.0], 1900: [3.0, 1.5, 4.5]}), [64, 1900])
    assert fell["commit_longest_over_shortest"] == pytest.approx(0.75) and not fell["stable"]
    rose = same_text_curve(_first_rows({64: [4.0, 2.0, 6.0], 1900: [5.0, 2.5, 7.5]}), [64, 1900])
    assert rose["commit_longest_over_shortest"] == pytest.approx(1.25) and not rose["stable"]


def _generation_rows(commits: dict[int, list[float]]) -> list[dict]:
    return [
        {
            "type": "code",
            "source": f"t{i}",
            "context": c,
            "commit": k,
            "step_ms": 2.0 + c / 1000,
            "decode_tok_s": k / (2.0 + c / 1000),
            "repeated_8gram_frac": 0.5,
        }
        for c, ks in commits.items()
        for i, k in enumerate(ks)
    ]


def test_verdict_needs_the_same_text_within_and_a_generation_that_does_not_fall():
    flat = _first_rows({64: [3.0, 3.0, 3.0], 1900: [3.0, 3.0, 3.3]})
    fell = _generation_rows({64: [6.0, 5.0, 9.0], 1900: [5.5, 4.0, 3.0]})
    got = curves(fell, flat, [64, 1900])["code"]
    gen = got["generation"]
    assert [p["commit"] for p in gen["points"]] == [6.0, 4.0], "medians over texts"
    assert [p["step_ms"] for p in gen["points"]] == [2.064, 3.9]
    assert gen["commit_longest_over_shortest"] == pytest.approx(4.0 / 6.0)
    assert gen["ci95"][0] <= 4.0 / 6.0 <= gen["ci95"][1]
    assert got["same_text"]["stable"] and not gen["holds"]
    assert got["drafter_holds_up"] is False, "the generation fell a third"
    rose = _generation_rows({64: [6.0, 5.0, 9.0], 1900: [9.0, 8.0, 12.0]})
    got = curves(rose, flat, [64, 1900])["code"]
    assert got["generation"]["commit_longest_over_shortest"] == pytest.approx(1.5)
    assert got["drafter_holds_up"] is True, "a rise is text (the repeat share tells how much)"
    fell_first = _first_rows({64: [3.0, 3.0, 3.0], 1900: [2.0, 2.0, 2.0]})
    assert curves(rose, fell_first, [64, 1900])["code"]["drafter_holds_up"] is False


@pytest.mark.slow  # the bench CLI as a subprocess
def test_cli_refuses_a_context_beyond_the_model_and_reports_json(tiny_pair, corpus):
    target, drafter = tiny_pair
    base = [
        sys.executable,
        "-m",
        "engine.bench.context",
        "--model-path",
        str(target),
        "--draft-model-path",
        str(drafter),
        "--corpus",
        str(corpus),
        "--threads",
        "1",
    ]
    too_long = subprocess.run([*base, "--contexts", "64,4096"], capture_output=True, text=True)
    assert too_long.returncode != 0 and "exceeds the model's" in too_long.stderr
    ok = subprocess.run(
        [*base, "--contexts", "32,64", "--texts", "2", "--cuts", "2", "--max-new-tokens", "4"]
        + ["--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(ok.stdout)
    assert set(report["curves"]) == {"code", "prose"}
    code = report["curves"]["code"]
    assert [p["context"] for p in code["generation"]["points"]] == [32, 64]
    assert [p["samples"] for p in code["same_text"]["points"]] == [2 * 2, 2 * 2]
    assert len(report["rows"]) == 2 * 2 * 2 and len(report["first_round_rows"]) == 2 * 2 * 2 * 2
    assert report["config"]["cuts"] == 2
    text = subprocess.run(
        [*base, "--contexts", "32,64", "--texts", "2", "--cuts", "2", "--max-new-tokens", "4"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "4-token generation" in text and "same text (4 cut points)" in text


@pytest.mark.slow  # a benchmark against transformers' generate()
def test_ar_against_transformers_generate_reports_a_paired_ratio(tiny_pair):
    pytest.importorskip("transformers")
    target, _ = tiny_pair
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.bench.vs_transformers",
            "--model-path",
            str(target),
            "--limit",
            "2",
            "--repeat",
            "2",
            "--max-new-tokens",
            "6",
            "--threads",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["identical_tokens"] is True  # the run exits non-zero when tokens differ
    assert len(report["prompts"]) == 2
    for row in report["prompts"]:
        assert row["ours_tok_s"] > 0 and row["transformers_tok_s"] > 0
    q1, q3 = report["iqr"]
    assert q1 <= report["ours_over_transformers"] <= q3
