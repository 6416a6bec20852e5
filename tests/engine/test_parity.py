"""Our Qwen3 forward must match transformers' Qwen3ForCausalLM on the same weights."""

from __future__ import annotations

import pytest
import torch

from engine.checkpoint import DEFAULT_TARGET_PATH, load_target
from engine.model import RotaryEmbedding
from engine.tiny import make_random_pair

transformers = pytest.importorskip("transformers")


def compare_with_transformers(model_dir, seq_len=40):
    ours = load_target(model_dir)
    ref = transformers.Qwen3ForCausalLM.from_pretrained(
        str(model_dir), torch_dtype=torch.float32
    ).eval()
    ids = torch.randint(0, 256, (1, seq_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = ref(ids, output_hidden_states=True)
        logits, hidden = ours(
            ids, torch.arange(seq_len)[None], output_layers=range(ours.config.num_hidden_layers)
        )
    torch.testing.assert_close(logits, want.logits, atol=1e-4, rtol=1e-4)
    assert len(hidden) == len(want.hidden_states) - 1
    for layer, h in enumerate(hidden):
        # transformers' hidden_states[l + 1] is the output of decoder layer l, except that
        # the last one is the final-normed output: a drafter tapping it sees that in both.
        torch.testing.assert_close(h, want.hidden_states[layer + 1], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("tie", [False, True])
def test_random_tiny_target_matches_transformers(tmp_path, tie):
    target_dir, _ = make_random_pair(tmp_path, seed=3, tie=tie, layers=3, rope_theta=1e6)
    compare_with_transformers(target_dir)


def test_incremental_decoding_matches_full_forward(tiny_pair):
    """Prefill + one-token steps through the cache == one full causal forward."""
    model = load_target(tiny_pair[0])
    ids = torch.randint(0, 256, (1, 24), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        full, _ = model(ids, torch.arange(24)[None])
        cache = model.new_cache(64)
        part, _ = model(ids[:, :16], torch.arange(16)[None], cache)
        steps = [model(ids[:, i : i + 1], torch.tensor([[i]]), cache)[0] for i in range(16, 24)]
    torch.testing.assert_close(torch.cat([part, *steps], dim=1), full, atol=1e-5, rtol=1e-4)


@pytest.mark.skipif(
    not (DEFAULT_TARGET_PATH / "config.json").exists(), reason="bundled weights not trained yet"
)
def test_bundled_target_matches_transformers():
    compare_with_transformers(DEFAULT_TARGET_PATH, seq_len=64)


def test_tokenizer_loads_in_transformers(tiny_pair):
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tiny_pair[0] / "tokenizer.json"))
    text = "def f(x):\n    return x  # ünïcode\n"
    assert tok.decode(tok(text)["input_ids"]) == text
    assert tok(text)["input_ids"] == list(text.encode())


def test_bf16_forward_tracks_fp32_and_decodes(tiny_pair):
    """bf16 is the GPU dtype: it must load, stay close to fp32, and run every method."""
    from engine.checkpoint import load_bundle
    from engine.decode import Decoder

    f32 = load_bundle(*tiny_pair)
    b16 = load_bundle(*tiny_pair, dtype="bfloat16")
    assert b16.target.dtype == torch.bfloat16 and b16.drafter.fc.weight.dtype == torch.bfloat16
    ids = torch.randint(0, 256, (1, 32), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        a, _ = f32.target(ids, torch.arange(32)[None])
        b, _ = b16.target(ids, torch.arange(32)[None])
    torch.testing.assert_close(b.float(), a, atol=0.05, rtol=0.05)
    for method in ("ar", "dflash", "ddtree"):
        g = Decoder(b16.target, b16.drafter, method=method, budget=8).generate(
            list(range(65, 90)), max_new_tokens=10
        )
        assert len(g.tokens) == 10


def test_rope_tables_equal_direct_evaluation_and_a_reserved_bound_reads_no_positions():
    rope = RotaryEmbedding(16, 10000.0)
    pos = torch.tensor([[0, 5, 3, 700, 5]])
    direct = rope(pos, torch.float32)  # grad mode: evaluated directly, no table
    with torch.no_grad():
        tabled = rope(pos, torch.float32)
    assert torch.equal(direct[0], tabled[0]) and torch.equal(direct[1], tabled[1])
    # A meta tensor has no values: reading the largest position back fails, as it would
    # stall a GPU. With a bound reserved, off-CPU positions are only ever indexed with.
    meta = torch.arange(12, device="meta")[None]
    with torch.no_grad():
        with pytest.raises((RuntimeError, NotImplementedError)):
            rope(meta, torch.float32)
        rope.reserve(64)
        cos, sin = rope(meta, torch.float32)
    assert cos.shape == sin.shape == (1, 1, 12, 16) and cos.device.type == "meta"


def test_rolled_rope_with_the_signed_table_is_bit_identical_to_rotate_half():
    from engine.model import apply_rope, apply_rope_rolled

    rope = RotaryEmbedding(16, 10000.0)
    pos = torch.tensor([[0, 5, 3, 700, 5]])
    x = torch.randn(1, 3, 5, 16)
    direct = rope(pos, torch.float32, signed=True)  # grad mode: evaluated directly
    with torch.no_grad():
        cos, sin = rope(pos, torch.float32)
        tcos, ssin = rope(pos, torch.float32, signed=True)
    assert torch.equal(direct[1], ssin) and torch.equal(tcos, cos)
    assert not torch.equal(ssin, sin)  # the first half is negated
    assert torch.equal(apply_rope_rolled(x, cos, ssin), apply_rope(x, cos, sin))


def test_decoder_reserves_a_block_past_its_context(tiny_pair):
    from engine.checkpoint import load_bundle
    from engine.decode import Decoder

    b = load_bundle(*tiny_pair)
    dec = Decoder(b.target, b.drafter, method="ddtree", max_context=100)
    bound = 100 + dec.block_size
    assert b.target.model.rotary_emb.reserved >= bound and b.drafter.rotary_emb.reserved >= bound
