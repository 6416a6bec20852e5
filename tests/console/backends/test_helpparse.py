"""The argparse `--help` parser and the curated-notes merge, on SGLang/vLLM/our help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from console.backends import get_backend
from console.backends.helpparse import parse_help
from console.backends.notes import SGLANG_NOTES, VLLM_NOTES, merge_notes
from console.backends.schema import flags_to_argv

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _schema(name: str, notes):
    schema = parse_help((FIXTURES / name).read_text())
    return schema, merge_notes(schema, notes)


def test_sglang_help_types_choices_aliases_and_nargs() -> None:
    schema, roles = _schema("sglang_help.txt", SGLANG_NOTES)
    model = schema.resolve("model")
    assert model is not None and model.name == "model-path"
    assert "Hugging Face repo ID" in model.help  # continuation lines joined
    algo = schema.resolve("--speculative-algorithm")
    assert algo.choices == ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH")
    assert schema.resolve("trust-remote-code").type == "bool"
    assert schema.resolve("cuda-graph-bs").multiple
    assert schema.resolve("help") is None
    # argparse never prints types: the curated notes make the tuned ones ints.
    window = schema.resolve("speculative_draft_window_size")
    assert window.type == "int" and window.tuned and "window" in window.note.lower()
    assert schema.resolve("page-size").type == "int"
    assert schema.resolve("mem-fraction-static").type == "str"  # unknown stays a string
    assert roles["draft_window"] == "speculative-draft-window-size"
    assert roles["block_size"] == "speculative-num-draft-tokens"
    assert roles["context_length"] == "context-length"
    # The hidden deprecated spelling is not listed, but typing it reaches the new flag.
    assert schema.resolve("speculative-dflash-draft-window-size").name == window.name
    # SGLang's DFlash-only block-size name is a flag of its own, not a spelling of another.
    assert schema.resolve("speculative-dflash-block-size").name == "speculative-dflash-block-size"


def test_old_sglang_keeps_its_own_spelling_for_the_window() -> None:
    schema, roles = _schema("sglang_help_old.txt", SGLANG_NOTES)
    # This installed SGLang only knows the old name: typing the new one must map to it.
    spec = schema.resolve("speculative-draft-window-size")
    assert spec.name == "speculative-dflash-draft-window-size"
    assert roles["draft_window"] == "speculative-dflash-draft-window-size"
    assert flags_to_argv({spec.name: 64}, schema) == [
        "--speculative-dflash-draft-window-size",
        "64",
    ]


def test_vllm_help_groups_defaults_and_boolean_optional() -> None:
    schema, roles = _schema("vllm_help.txt", VLLM_NOTES)
    assert schema.resolve("port").default == "8000"
    assert schema.resolve("gpu-memory-utilization").type == "float"
    assert schema.resolve("gpu-memory-utilization").default == "0.9"  # wrapped default
    block = schema.resolve("block-size")
    assert block.type == "int" and block.choices == ("1", "8", "16", "32", "64", "128")
    eager = schema.resolve("enforce-eager")
    assert eager.type == "bool" and eager.negatable and eager.off_option == "no-enforce-eager"
    assert schema.resolve("no-enforce-eager") is eager and schema.is_off_spelling(
        "no-enforce-eager"
    )
    assert flags_to_argv({"enforce-eager": False}, schema) == ["--no-enforce-eager"]
    assert schema.resolve("speculative-config").type == "json"
    assert roles["context_length"] == "max-model-len"
    assert schema.resolve("cuda-graph-sizes").multiple
    # Group descriptions ("Configuration for the model.") are not flags or help text.
    assert "Configuration" not in schema.resolve("model").help


def test_our_engine_help_from_the_real_server() -> None:
    pytest.importorskip("engine.serve.args", reason="engine server not available")
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli", "serve", "--help"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    schema = parse_help(out)
    roles = merge_notes(schema, get_backend("builtin").notes)
    for name in (
        "model-path", "speculative-algorithm", "speculative-draft-model-path",
        "speculative-num-draft-tokens", "speculative-ddtree-budget",
        "speculative-draft-window-size", "context-length", "reasoning-parser",
        "tool-call-parser", "host", "port", "api-key", "served-model-name",
        "decode-log-interval", "device", "dtype",
    ):  # fmt: skip
        assert name in schema.flags, name
    assert schema.resolve("speculative-algorithm").choices == ("NONE", "DFLASH", "DDTREE")
    assert schema.resolve("port").type == "int" and schema.resolve("port").default == "30000"
    # The `[type]` tag our engine puts first in each help becomes the type, then is dropped.
    assert schema.resolve("decode-log-interval").help.startswith("Print")
    assert schema.resolve("skip-server-warmup").type == "bool"
    assert roles["draft_window"] == "speculative-draft-window-size"
    assert schema.resolve("speculative-dflash-draft-window-size").name == (
        "speculative-draft-window-size"
    )


def test_help_with_inline_help_and_positional_section() -> None:
    text = """usage: x [-h] [--alpha ALPHA] name

positional arguments:
  name           not a flag

options:
  -h, --help     show this help message and exit
  --alpha ALPHA  first (default: 3)
  --beta-long-option-name BETA_LONG_OPTION_NAME
                 second line help
                 continues here
  --gamma        switch
"""
    schema = parse_help(text)
    assert schema.names() == ["alpha", "beta-long-option-name", "gamma"]
    assert schema.resolve("alpha").type == "int" and schema.resolve("alpha").default == "3"
    assert schema.resolve("beta-long-option-name").help == "second line help continues here"
    assert schema.resolve("gamma").type == "bool"
