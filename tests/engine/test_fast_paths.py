"""The inference fast paths change how a forward is computed, never what is decoded:
oneDNN matmuls for multi-row inputs (engine.model.linear) give the tokens the plain
F.linear path gives, for every method, on the bundled pair and on a random one, and
weights prepacked in oneDNN's layout give bit-identical forwards."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import engine.model as model
from engine.checkpoint import load_bundle
from engine.decode import Decoder
from engine.tiny import make_random_pair

PROMPT = [ord(c) for c in "def add(a, b):\n    return a + b\n\nclass Stack:\n    def push("]
needs_onednn = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN"
)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    t, d = make_random_pair(tmp_path_factory.mktemp("fast"), seed=3, block_size=8)
    return {"random": load_bundle(t, d), "bundled": load_bundle()}


def _decode(bundle, method, budget=None):
    dec = Decoder(bundle.target, bundle.drafter, method=method, budget=budget)
    return dec.generate(PROMPT, max_new_tokens=40, ignore_eos=True)


@needs_onednn
@pytest.mark.parametrize("which", ["random", "bundled"])
def test_onednn_and_plain_matmuls_decode_the_same_tokens(bundles, which, monkeypatch):
    b = bundles[which]
    fast = {m: _decode(b, m, 4 if m == "ddtree" else None) for m in ("ar", "dflash", "ddtree")}
    monkeypatch.setattr(model, "ONEDNN_DTYPES", ())
    plain = {m: _decode(b, m, 4 if m == "ddtree" else None) for m in ("ar", "dflash", "ddtree")}
    for m in fast:
        assert fast[m].tokens == plain[m].tokens == plain["ar"].tokens, m
        assert [r.commit_len for r in fast[m].rounds] == [r.commit_len for r in plain[m].rounds]


def test_a_cpu_without_onednn_bf16_kernels_keeps_bf16_matmuls_plain(monkeypatch):
    # On a CPU without AVX-512 BW/VL/DQ or AVX-NE-CONVERT, oneDNN's bf16 weight reorder
    # raises: a bf16 load must neither pack its weights nor hand them to oneDNN there.
    monkeypatch.setattr(model, "ONEDNN_DTYPES", (torch.float32,))
    called = []
    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", lambda *a: called.append(a))
    w = torch.randn(48, 32).t().contiguous().t().to(torch.bfloat16)
    assert model.pack_weight(w) is None
    x = torch.randn(1, 16, 32, dtype=torch.bfloat16)
    with torch.inference_mode():
        torch.testing.assert_close(model.linear(x, w), F.linear(x, w))
    assert called == []


@needs_onednn
def test_linear_takes_onednn_only_for_several_rows_of_a_column_major_weight(monkeypatch):
    calls = []
    real = torch.ops.mkldnn._linear_pointwise

    class Spy:
        def __call__(self, *args):
            calls.append(args[0].shape)
            return real(*args)

    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", Spy())
    w = torch.randn(48, 32)
    col = w.t().contiguous().t()
    with torch.inference_mode():
        for rows in (1, model.ONEDNN_MIN_ROWS - 1, model.ONEDNN_MIN_ROWS, 16):
            x = torch.randn(1, rows, 32)
            torch.testing.assert_close(model.linear(x, col), F.linear(x, w))
        model.linear(torch.randn(1, 16, 32), w)  # row-major: F.linear
    assert calls == [(1, model.ONEDNN_MIN_ROWS, 32), (1, 16, 32)]
    x = torch.randn(1, 16, 32, requires_grad=True)
    model.linear(x, col).sum().backward()  # training keeps autograd's F.linear
    assert len(calls) == 2 and x.grad is not None


@needs_onednn
def test_packed_weights_give_bit_identical_forwards_and_are_kept_per_matmul():
    from engine.tiny import init_pair, tiny_configs

    def fused(pack):
        target, drafter = init_pair(*tiny_configs(block_size=8), seed=5)
        model.fuse_for_inference(target, pack=pack)
        model.fuse_for_inference(drafter, pack=pack)
        return target, drafter

    (plain, _), (packed, drafter) = fused(False), fused(True)
    attn, mlp = packed.model.layers[0].self_attn, packed.model.layers[0].mlp
    assert attn.qkv_packed is not None and mlp.fused_packed is not None
    assert all(getattr(m, "packed", None) is not None for m in (attn.o_proj, mlp.down_proj))
    assert packed.lm_head.packed is not None and drafter.fc.packed is not None
    assert not hasattr(attn.q_proj, "packed")  # joined into qkv: never multiplied alone
    assert plain.model.layers[0].self_attn.qkv_packed is None
    ids = torch.tensor([PROMPT[:24]])
    with torch.inference_mode():
        for rows in (slice(0, 24), slice(0, 1)):  # a multi-row forward and a 1-row one
            a, ha = plain(ids[:, rows], torch.arange(24)[None, rows], output_layers=[0, 1])
            b, hb = packed(ids[:, rows], torch.arange(24)[None, rows], output_layers=[0, 1])
            assert torch.equal(a, b) and all(torch.equal(x, y) for x, y in zip(ha, hb, strict=True))


@pytest.mark.parametrize("signed", [False, True])
def test_rotary_span_is_the_gather_of_its_positions(signed):
    """The drafter's consecutive rows take slices of the RoPE tables: the same values, bit
    for bit, as gathering them by a position tensor, also where the span grows the table."""
    rope = model.RotaryEmbedding(64, 10_000.0)
    with torch.inference_mode():
        for first, count in [(0, 16), (250, 30), (1000, 7)]:
            pos = torch.arange(first, first + count)[None]
            cos, sin = rope.span(first, count, torch.device("cpu"), torch.float32, signed)
            ref_cos, ref_sin = rope(pos, torch.float32, signed)
            assert cos.shape == ref_cos.shape == (1, 1, count, 64)
            assert torch.equal(cos, ref_cos) and torch.equal(sin, ref_sin)
    cos, _ = rope.span(5, 3, torch.device("cpu"), torch.float32)  # training: computed
    assert torch.equal(cos, rope(torch.arange(5, 8)[None], torch.float32)[0])


@pytest.mark.parametrize("masked", [False, True])
def test_grouped_query_rows_folded_into_their_kv_head_attend_bit_identically(masked):
    """Multi-row attention folds the query heads sharing a K/V head into one head's rows
    (the tree verify and the draft block): the same output, bit for bit, as SDPA's own
    grouped-query path over a cache view, with the tree mask or without one."""
    cfg = model.Qwen3Config(
        vocab_size=8, hidden_size=256, intermediate_size=8, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64,
    )  # fmt: skip
    attn = model.Attention(cfg)
    gen = torch.Generator().manual_seed(5)
    t, past = 16, 300
    q = torch.randn(1, t, 4, 64, generator=gen).transpose(1, 2)  # a strided view, as in use
    k = torch.randn(1, 2, 512, 64, generator=gen)[:, :, : past + t]
    v = torch.randn(1, 2, 512, 64, generator=gen)[:, :, : past + t]
    mask = None
    if masked:
        vis = torch.rand(t, t, generator=gen) < 0.5
        vis |= torch.eye(t, dtype=torch.bool)
        mask = torch.zeros(1, 1, t, past + t)
        mask[..., past:].masked_fill_(~vis, torch.finfo(torch.float32).min)
    with torch.inference_mode():
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        ref = model.project(attn.o_proj, ref.transpose(1, 2).reshape(1, t, 256))
        got = attn.attend(q, k, v, mask, is_causal=False)
    assert torch.equal(got, ref)


@pytest.mark.parametrize("budget", [0, 5, 15])
def test_verify_with_the_mask_folded_once_a_round_is_bit_identical(bundles, budget):
    """TreeMask writes the verify mask folded for grouped-query heads (rows repeated per
    group) so no layer repeats it: the verify forward gives the same logits and taps, bit
    for bit, as with the plain mask, also for a one-node tree (one row per group)."""
    from engine.tree import build_tree
    from engine.verify_inputs import TreeIds, TreeMask

    target = bundles["bundled"].target
    cfg = target.config
    groups = cfg.num_attention_heads // cfg.num_key_value_heads
    assert groups > 1, "the bundled target has grouped-query heads"
    n = len(PROMPT)
    tree = build_tree(7, torch.randn(15, cfg.vocab_size, generator=torch.Generator()), budget)
    ids, pos = TreeIds("cpu")(tree, n)
    out = {}
    with torch.inference_mode():
        for g in (1, groups):
            cache = target.new_cache(256)
            target(torch.tensor([PROMPT]), torch.arange(n)[None], cache)
            mask = TreeMask(target.dtype, "cpu", g)(tree, n)
            assert mask.shape == (1, 1, g * len(tree), n + len(tree))
            out[g] = target(ids, pos, cache, attn_mask=mask, output_layers=[1, 2])
    (a, ha), (b, hb) = out[1], out[groups]
    assert torch.equal(a, b) and all(torch.equal(x, y) for x, y in zip(ha, hb, strict=True))


def test_accepted_rows_gathered_from_the_taps_side_by_side_fuse_bit_identically(bundles):
    """A DDTree commit concatenates the target's taps first and gathers the accepted path
    once (ids written into a reused buffer, which grows when a path is longer): the same
    draft context, bit for bit, as gathering every tap and concatenating after."""
    from engine.verify_inputs import RowIds

    drafter = bundles["bundled"].drafter
    width = drafter.config.layers.hidden_size
    gen = torch.Generator().manual_seed(9)
    taps = [torch.randn(1, 16, width, generator=gen) for _ in drafter.target_layer_ids]
    assert len(taps) > 1
    row_ids = RowIds("cpu", 4)
    with torch.inference_mode():
        for path in ([0, 1, 3, 7], [0, 2], [0, 2, 5, 6, 9, 10, 12, 13, 15], [0, 4, 5]):
            ref = drafter.fuse([h[:, torch.tensor(path)] for h in taps])
            got = drafter.fuse([torch.cat(taps, dim=-1).index_select(1, row_ids(path))])
            assert torch.equal(got, ref), path
    assert row_ids.buf.shape[0] >= 9
